#!/usr/bin/env bash
# The main job: install, then train the curiosity agent on the built-in maze with default settings.
# Extra arguments go to `wanderlust train`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh video
exec .venv/bin/wanderlust train "$@"
