"""Release guarantees: the real input device lives in a small helper process.

``GuardedDevice`` (agent side) starts ``python -m wanderlust.envs.screen.helper`` and sends it
one JSON command per line (apply / tap / neutral / close); the helper answers ``ok`` or
``error <message>``. The helper releases every key, button and stick, then exits, when:

- the agent closes the device, or its end of the pipe closes (normal exit, exception,
  Ctrl-C, SIGTERM, ``kill -9``, Windows ``TerminateProcess``: the OS closes a dead process's
  pipes; on Windows the agent's end is not inheritable, so no other process keeps it open);
- the agent dies while another process still holds the pipe (forked workers, POSIX):
  ``prctl(PR_SET_PDEATHSIG)`` on Linux plus ``parent_watch`` every ``POLL_SECONDS``;
- the helper gets SIGTERM (it ignores SIGINT: Ctrl-C is the agent's to handle);
- the stop hotkey (default F12) is down; it polls it (``XQueryKeymap`` / ``GetAsyncKeyState``,
  no grab), so the hotkey works even when the agent is stuck. It then exits with
  ``HOTKEY_EXIT_CODE`` and the agent's next call raises ``StopRequested``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, Protocol

import numpy as np

from wanderlust.envs.screen.errors import ScreenSetupError, StopRequested
from wanderlust.envs.screen.inputs import (
    KEYBOARD_KINDS,
    GamepadDevice,
    InputDevice,
    KeyboardMouseDevice,
    check_sticks,
    key_backend,
)
from wanderlust.envs.screen.mapping import KeyMapping, mapping_from_dict

POLL_SECONDS = 0.02
"""Helper loop period: hotkey and parent checks happen at least this often."""
HOTKEY_EXIT_CODE = 3
"""Helper exit status after the stop hotkey."""
DEVICE_KINDS = (*KEYBOARD_KINDS, "gamepad")
PR_SET_PDEATHSIG = 1
SYNCHRONIZE, WAIT_OBJECT_0 = 0x00100000, 0  # Win32: OpenProcess access right, "process ended"


class Hotkey(Protocol):
    """A key polled for an emergency stop."""

    key: str

    def pressed(self) -> bool: ...
    def close(self) -> None: ...


class Win32Hotkey:
    """Polls one key with ``GetAsyncKeyState`` (Windows)."""

    NAMED = {"escape": 0x1B, "pause": 0x13, "scroll_lock": 0x91, "home": 0x24, "end": 0x23}

    def __init__(self, key: str = "F12") -> None:
        self.key = key
        name = key.lower()
        if name[:1] == "f" and name[1:].isdigit() and 1 <= int(name[1:]) <= 24:
            self._vk = 0x6F + int(name[1:])
        elif len(name) == 1 and name.isalnum():
            self._vk = ord(name.upper())
        elif name in self.NAMED:
            self._vk = self.NAMED[name]
        else:
            raise ValueError(f"unsupported stop hotkey {key!r} on Windows; use F1..F24, a letter, or Escape/Pause")
        self._user32 = ctypes.windll.user32  # type: ignore[attr-defined]

    def pressed(self) -> bool:
        return bool(self._user32.GetAsyncKeyState(self._vk) & 0x8000)

    def close(self) -> None:
        pass


def make_hotkey(key: str = "F12", display_name: str | None = None) -> Hotkey:
    """The platform's hotkey poller (X11 ``XQueryKeymap`` on Linux, Win32 on Windows)."""
    if sys.platform == "win32":
        return Win32Hotkey(key)
    from wanderlust.envs.screen.x11 import X11Hotkey

    return X11Hotkey(key, display_name)


@contextmanager
def raise_on_sigterm() -> Iterator[None]:
    """Inside the block, SIGTERM raises ``SystemExit(143)`` so ``finally``/``close()`` run.

    Only in the main thread (elsewhere it does nothing). The guard helper releases inputs on
    SIGTERM anyway; this lets the agent also save and close cleanly.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# ---- helper process --------------------------------------------------------------------
def build_device(spec: dict[str, Any]) -> InputDevice:
    """The real device a spec describes (see ``GuardedDevice``)."""
    if spec["kind"] in KEYBOARD_KINDS:
        mapping = mapping_from_dict(spec.get("mapping") or {})
        backend = key_backend(spec["kind"])
        if backend == "pynput" and spec.get("display") and sys.platform != "win32":
            os.environ["DISPLAY"] = spec["display"]  # pynput only uses $DISPLAY (this helper's own)
        return KeyboardMouseDevice(mapping, display_name=spec.get("display"), backend=backend)
    return GamepadDevice(spec.get("buttons") or ())


def parent_watch(parent_pid: int) -> Callable[[], bool]:
    """A check that stays True while the agent process ``parent_pid`` lives.

    POSIX: ``os.getppid()`` changes when the parent dies (the helper is re-parented).
    Windows: ``os.getppid()`` keeps the creator's id forever, so the helper holds a
    SYNCHRONIZE handle to the parent (immune to pid reuse) and polls it with
    ``WaitForSingleObject(handle, 0)``; only a signalled handle (the process ended) counts as
    dead, so a failed call or a missing handle leave the pipe's end of file to end the helper.
    """
    if sys.platform != "win32":
        return lambda: os.getppid() == parent_pid
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    kernel32.WaitForSingleObject.restype = wintypes.DWORD
    kernel32.WaitForSingleObject.argtypes = (wintypes.HANDLE, wintypes.DWORD)
    handle = kernel32.OpenProcess(SYNCHRONIZE, False, parent_pid)
    if not handle:
        return lambda: True
    return lambda: kernel32.WaitForSingleObject(handle, 0) != WAIT_OBJECT_0


def _set_parent_death_signal(parent_pid: int) -> None:
    """Ask Linux to send SIGUSR1 when the parent dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGUSR1), 0, 0, 0)
    if os.getppid() != parent_pid:
        raise SystemExit(0)


def _read_lines(stream: BinaryIO, lines: queue.Queue) -> None:
    """Reader thread: every command line into ``lines``, then None at end of file."""
    for line in iter(stream.readline, b""):
        lines.put(line)
    lines.put(None)


def _handle(device: InputDevice, command: dict[str, Any]) -> bool:
    """Run one command; True when it was ``close``."""
    op = command.get("op")
    if op == "apply":
        device.apply(np.asarray(command["action"], dtype=np.float64), command.get("buttons") or ())
    elif op == "tap":
        device.tap(str(command["name"]))
    elif op == "neutral":
        device.neutral()
    elif op == "close":
        device.neutral()  # released before the answer; the device is closed on the way out
        return True
    else:
        raise ValueError(f"unknown command {op!r}")
    return False


def serve(spec: dict[str, Any], parent_pid: int, commands: BinaryIO, replies: BinaryIO) -> int:
    """The helper's main loop; returns its exit status (0, or HOTKEY_EXIT_CODE)."""

    # Handlers only set a flag: raising from them could cut a release short half-way.
    stop_signals: list[int] = []

    def _parent_died(signum: int, frame: Any) -> None:
        if os.getppid() != parent_pid:  # also sent when only the creating *thread* exits
            stop_signals.append(signum)

    def _terminate(signum: int, frame: Any) -> None:
        stop_signals.append(signum)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminate)
    if hasattr(signal, "SIGUSR1"):
        signal.signal(signal.SIGUSR1, _parent_died)
    _set_parent_death_signal(parent_pid)
    parent_alive = parent_watch(parent_pid)

    def reply(text: str) -> None:
        replies.write(text.replace("\n", " ").encode() + b"\n")
        replies.flush()

    hotkey, device = None, None
    try:
        device = build_device(spec)
        if spec.get("hotkey"):
            hotkey = make_hotkey(spec["hotkey"], spec.get("display"))
    except (ValueError, RuntimeError) as error:
        if device is not None:
            device.close()
        reply(f"error {type(error).__name__}: {error}")
        return 2
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_read_lines, args=(commands, lines), daemon=True).start()
    reply("ready")
    try:
        while True:
            if stop_signals or not parent_alive():
                return 0
            if hotkey is not None and hotkey.pressed():
                return HOTKEY_EXIT_CODE
            try:
                line = lines.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if line is None:
                return 0
            try:
                if _handle(device, json.loads(line)):
                    reply("ok")
                    return 0
            except (ValueError, KeyError, RuntimeError) as error:
                reply(f"error {type(error).__name__}: {error}")
                continue
            reply("ok")
    finally:
        try:
            device.close()  # releases everything first
        finally:
            if hotkey is not None:
                hotkey.close()


# ---- agent side ------------------------------------------------------------------------
class GuardedDevice:
    """An ``InputDevice`` whose real device (keyboard or gamepad) runs in a helper process.

    Every call waits for the helper's answer, so when ``apply``/``neutral`` return the
    events have been sent. If the helper stopped on the hotkey, calls raise ``StopRequested``.

    Args:
        kind: 'keyboard' (KeyboardMouseDevice: XTest on Linux, pynput/SendInput on Windows),
            'keyboard-pynput' (KeyboardMouseDevice through pynput on any platform) or
            'gamepad' (virtual X360 pad).
        mapping: keyboard mapping (keyboard only; default WASD + mouse look).
        buttons: gamepad button names of the action's buttons (gamepad only).
        hotkey: stop key polled by the helper (None: no hotkey in the helper).
        display_name: X display for keyboard input and the hotkey (default ``$DISPLAY``).
        start_timeout: seconds to wait for the helper to start.
    """

    def __init__(
        self,
        kind: str = "keyboard",
        mapping: KeyMapping | None = None,
        buttons: Sequence[str] = (),
        hotkey: str | None = "F12",
        display_name: str | None = None,
        start_timeout: float = 20.0,
    ) -> None:
        if kind not in DEVICE_KINDS:
            raise ValueError(f"input kind must be 'keyboard' or 'gamepad' (or 'keyboard-pynput'), got {kind!r}")
        spec = {
            "kind": kind,
            "mapping": dataclasses.asdict(mapping) if mapping is not None else None,
            "buttons": list(buttons),
            "hotkey": hotkey,
            "display": display_name,
        }
        self.hotkey = hotkey
        source_root = str(Path(__file__).resolve().parents[3])  # .../src, holding wanderlust/
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "wanderlust.envs.screen.helper", json.dumps(spec), str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._closed = False
        answer = self._read_answer(start_timeout)
        if answer != "ready":
            self.process.wait(timeout=5)
            self._closed = True
            self._raise_helper_error(answer or "the input helper exited before it was ready")

    def _read_answer(self, timeout: float | None = None) -> str:
        """One answer line ('' if the helper is gone)."""
        assert self.process.stdout is not None
        if timeout is not None and sys.platform != "win32":
            import select

            ready, _, _ = select.select([self.process.stdout], [], [], timeout)
            if not ready:
                self.process.kill()
                raise ScreenSetupError(f"the input helper did not start within {timeout:.0f} s")
        return self.process.stdout.readline().decode().strip()

    @staticmethod
    def _raise_helper_error(answer: str) -> None:
        message = answer.removeprefix("error ")
        kind, _, text = message.partition(": ")
        if kind == "ValueError":
            raise ValueError(text)
        if kind in ("ScreenSetupError", "RuntimeError"):
            raise ScreenSetupError(text)
        raise RuntimeError(message)

    def _helper_gone(self) -> None:
        """Raise why the helper is no longer there (it released everything on its way out)."""
        self._closed = True
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        if code == HOTKEY_EXIT_CODE:
            raise StopRequested(f"stop hotkey {self.hotkey} pressed: all inputs were released")
        raise RuntimeError(f"the input helper process exited (status {code}); all inputs were released")

    def _call(self, command: dict[str, Any]) -> None:
        if self._closed:
            raise RuntimeError("device is closed")
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(command).encode() + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            self._helper_gone()
        answer = self._read_answer()
        if not answer:
            self._helper_gone()
        if answer != "ok":
            self._raise_helper_error(answer)

    def apply(self, action: np.ndarray, buttons: Sequence[bool] = ()) -> None:
        sticks = check_sticks(action)
        self._call({"op": "apply", "action": sticks.tolist(), "buttons": [bool(b) for b in buttons]})

    def tap(self, name: str) -> None:
        self._call({"op": "tap", "name": name})

    def neutral(self) -> None:
        if not self._closed:
            self._call({"op": "neutral"})

    def close(self) -> None:
        """Release everything and stop the helper (a helper that already exited is fine)."""
        if self._closed:
            return
        try:
            self._call({"op": "close"})
        except (RuntimeError, StopRequested):
            pass
        finally:
            self._closed = True
            if self.process.stdin is not None:
                try:
                    self.process.stdin.close()
                except OSError:
                    pass
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()


def main(argv: Sequence[str]) -> NoReturn:
    """``python -m wanderlust.envs.screen.helper SPEC_JSON PARENT_PID`` (started by GuardedDevice)."""
    spec, parent_pid = json.loads(argv[0]), int(argv[1])
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints of device libraries go to stderr, not into the answers
    sys.stdout = sys.stderr
    try:
        code = serve(spec, parent_pid, sys.stdin.buffer, replies)
    except SystemExit as exit_request:  # parent already gone at start-up
        code = exit_request.code if isinstance(exit_request.code, int) else 0
    # os._exit: the reader thread may hold stdin's lock, which would abort a normal shutdown.
    os._exit(code)

