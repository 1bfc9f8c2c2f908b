#!/usr/bin/env bash
# Creates .venv and installs wanderlust with the given extras, on a fresh Debian/Ubuntu machine.
# torch is pinned first so that no unpinned (multi-GB CUDA) build is pulled in by a dependency.
# Usage: bash scripts/bootstrap.sh [EXTRAS]   e.g. bash scripts/bootstrap.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-}"
TORCH_VERSION="${WANDERLUST_TORCH_VERSION:-2.13.0}"
PY="${PYTHON:-python3}"

if ! "$PY" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    echo "bootstrap: installing python3-venv with apt-get" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
if ! python -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$TORCH_VERSION' else 1)" 2>/dev/null; then
    python -m pip install -q "torch==$TORCH_VERSION"
fi
if [ -n "$EXTRAS" ]; then
    python -m pip install -q -e ".[$EXTRAS]"
else
    python -m pip install -q -e .
fi
