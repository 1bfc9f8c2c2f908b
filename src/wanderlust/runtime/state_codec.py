"""Nested state <-> (JSON tree, flat tensors): the encoding inside a checkpoint.

:func:`flatten_state` splits a nested state (dicts, lists, tuples, torch tensors, numpy arrays and
scalars, ints of any size, floats incl. nan/inf, bools, strings, None) into a JSON-compatible tree
and a flat ``dict[str, torch.Tensor]`` that safetensors can store; :func:`unflatten_state` puts it
back together. JSON nodes that are not plain values are tagged objects:

- ``{"__tensor__": key}``: a torch tensor, stored under ``key``;
- ``{"__ndarray__": key, "dtype": "<f4", "shape": [..]}``: a numpy array, stored as its raw bytes
  (a 1-D uint8 tensor), so every fixed-size numpy dtype comes back exactly;
- ``{"__npscalar__": "<i8", "hex": ".."}``: a numpy scalar, its raw bytes in hex;
- ``{"__tuple__": [..]}``, ``{"__float__": "nan" | "inf" | "-inf"}``,
  ``{"__int__": "0x.."}`` (ints beyond 2**53, so every JSON reader keeps them exact);
- ``{"__dict__": [[key, value], ..]}``: a dict with int keys (optimizer states) or with a key that
  looks like a tag.

Decoding only builds dicts, lists, tuples, numbers, strings, tensors and numpy arrays of plain
dtypes; it never runs code named by the data.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import torch

_TAGS = ("__tensor__", "__ndarray__", "__npscalar__", "__tuple__", "__float__", "__int__", "__dict__")
_MAX_JSON_INT = 2**53


def flatten_state(state: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """Split a nested state into a JSON-compatible tree and a flat ``{key: tensor}`` dict.

    Keys are derived from the tree path (``"optimizer/state/0/exp_avg"``), made unique with a
    ``#n`` suffix when paths collide. Every tensor is copied to a contiguous CPU tensor, so views and
    tensors sharing storage are saved independently. Raises ``TypeError`` naming the path of the
    first unsupported value.
    """
    tensors: dict[str, torch.Tensor] = {}
    return _encode(state, (), tensors, set()), tensors


def unflatten_state(tree: Any, tensors: dict[str, torch.Tensor], device: str | torch.device = "cpu") -> Any:
    """Inverse of :func:`flatten_state`; raises ``ValueError`` on a malformed tree."""
    return _decode(tree, tensors, torch.device(device))


def _path_str(path: tuple) -> str:
    return "state" + "".join(f"[{part!r}]" for part in path)


def _unsupported(path: tuple, why: str) -> TypeError:
    return TypeError(
        f"cannot checkpoint {_path_str(path)}: {why}; use tensors, numpy arrays, numbers, strings, None, "
        "lists, tuples or dicts with str/int keys"
    )


def _check_numpy_dtype(dtype: np.dtype, path: tuple) -> None:
    if dtype.hasobject or dtype.fields is not None or dtype.kind == "V":
        raise _unsupported(path, f"numpy dtype {dtype} (object/structured) is not supported")


def _encode_int(value: int) -> Any:
    return value if abs(value) < _MAX_JSON_INT else {"__int__": hex(value)}


def _encode(obj: Any, path: tuple, tensors: dict[str, torch.Tensor], active: set[int]) -> Any:
    kind = type(obj)
    if obj is None or kind is bool or kind is str:
        return obj
    if kind is int:
        return _encode_int(obj)
    if kind is float:
        return obj if math.isfinite(obj) else {"__float__": repr(obj)}  # 'nan', 'inf', '-inf'
    if isinstance(obj, torch.Tensor):
        if obj.layout != torch.strided or obj.is_quantized or obj.is_complex():
            raise _unsupported(path, f"tensor with layout {obj.layout} and dtype {obj.dtype} is not supported")
        key = _tensor_key(path, tensors)
        tensors[key] = obj.detach().to("cpu").clone(memory_format=torch.contiguous_format)
        return {"__tensor__": key}
    if isinstance(obj, np.ndarray):
        _check_numpy_dtype(obj.dtype, path)
        key = _tensor_key(path, tensors)
        raw = np.ascontiguousarray(obj).reshape(-1).view(np.uint8).copy()
        tensors[key] = torch.from_numpy(raw)
        return {"__ndarray__": key, "dtype": obj.dtype.str, "shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        _check_numpy_dtype(obj.dtype, path)
        return {"__npscalar__": obj.dtype.str, "hex": np.asarray(obj).tobytes().hex()}
    if not isinstance(obj, (dict, list, tuple)):
        raise _unsupported(path, f"type {kind.__module__}.{kind.__qualname__} is not supported")
    if isinstance(obj, tuple) and kind is not tuple:
        raise _unsupported(path, f"{kind.__qualname__} (a named tuple) would load as a plain tuple; convert it")
    if id(obj) in active:
        raise _unsupported(path, "the state contains a reference cycle")
    active.add(id(obj))
    try:
        if isinstance(obj, dict):
            return _encode_dict(obj, path, tensors, active)
        items = [_encode(item, path + (i,), tensors, active) for i, item in enumerate(obj)]
        return items if isinstance(obj, list) else {"__tuple__": items}
    finally:
        active.discard(id(obj))


def _encode_dict(obj: dict, path: tuple, tensors: dict[str, torch.Tensor], active: set[int]) -> Any:
    for key in obj:
        if type(key) is not str and type(key) is not int:
            raise _unsupported(path + (key,), f"dict key of type {type(key).__qualname__} is not supported")
    if all(type(key) is str and key not in _TAGS for key in obj):
        return {key: _encode(value, path + (key,), tensors, active) for key, value in obj.items()}
    pairs = []
    for key, value in obj.items():
        encoded_key = key if type(key) is str else _encode_int(key)
        pairs.append([encoded_key, _encode(value, path + (key,), tensors, active)])
    return {"__dict__": pairs}


def _tensor_key(path: tuple, tensors: dict[str, torch.Tensor]) -> str:
    base = "/".join(str(part) for part in path) or "root"
    key, suffix = base, 1
    while key in tensors:
        key, suffix = f"{base}#{suffix}", suffix + 1
    return key


def _decode(node: Any, tensors: dict[str, torch.Tensor], device: torch.device) -> Any:
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [_decode(item, tensors, device) for item in node]
    if not isinstance(node, dict):
        raise ValueError(f"unexpected JSON value of type {type(node).__name__}")
    tags = [tag for tag in _TAGS if tag in node]
    if not tags:
        return {key: _decode(value, tensors, device) for key, value in node.items()}
    tag = tags[0]
    payload = node[tag]
    if tag == "__tensor__":
        return _lookup(tensors, payload).to(device)
    if tag == "__ndarray__":
        dtype = _numpy_dtype(node.get("dtype"))
        shape = node.get("shape")
        if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise ValueError(f"bad shape {shape!r} for numpy array {payload!r}")
        raw = _lookup(tensors, payload)
        if raw.dtype != torch.uint8 or raw.dim() != 1 or raw.numel() != math.prod(shape) * dtype.itemsize:
            raise ValueError(f"numpy array {payload!r} has {raw.numel()} bytes, not {shape} x {dtype}")
        return np.frombuffer(raw.numpy().tobytes(), dtype=dtype).reshape(shape).copy()
    if tag == "__npscalar__":
        dtype = _numpy_dtype(payload)
        data = bytes.fromhex(str(node.get("hex")))
        if len(data) != dtype.itemsize:
            raise ValueError(f"numpy scalar of dtype {dtype} has {len(data)} bytes")
        return np.frombuffer(data, dtype=dtype)[0]
    if tag == "__tuple__":
        if not isinstance(payload, list):
            raise ValueError("__tuple__ must hold a list")
        return tuple(_decode(item, tensors, device) for item in payload)
    if tag == "__float__":
        if payload not in ("nan", "inf", "-inf"):
            raise ValueError(f"bad non-finite float {payload!r}")
        return float(payload)
    if tag == "__int__":
        if not isinstance(payload, str) or not re.fullmatch(r"-?0x[0-9a-f]+", payload):
            raise ValueError(f"bad big int {payload!r}")
        return int(payload, 16)
    if not isinstance(payload, list) or not all(isinstance(pair, list) and len(pair) == 2 for pair in payload):
        raise ValueError("__dict__ must hold a list of [key, value] pairs")
    result = {}
    for key, value in payload:
        key = _decode(key, tensors, device)
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            raise ValueError(f"bad dict key {key!r}")
        result[key] = _decode(value, tensors, device)
    return result


def _lookup(tensors: dict[str, torch.Tensor], key: Any) -> torch.Tensor:
    if not isinstance(key, str) or key not in tensors:
        raise ValueError(f"refers to tensor {key!r}, which is not among the saved tensors")
    return tensors[key]


def _numpy_dtype(spec: Any) -> np.dtype:
    try:
        dtype = np.dtype(str(spec))
    except TypeError as error:
        raise ValueError(f"bad numpy dtype {spec!r}") from error
    if dtype.hasobject or dtype.fields is not None or dtype.kind == "V":
        raise ValueError(f"numpy dtype {dtype} is not allowed")
    return dtype
