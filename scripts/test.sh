#!/usr/bin/env bash
# Installs everything the tests need, then runs the test suite. Exit code 5 (no tests collected) fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh dev
# The live-screen tests drive a real window on a virtual X display (Xvfb) through XTest;
# the report test opens report.html in headless Chromium.
if ! command -v Xvfb >/dev/null 2>&1 || ! command -v xdotool >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
    echo "test.sh: installing xvfb, xdotool and chromium with apt-get" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq xvfb xdotool chromium >/dev/null
fi
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that is a failure" >&2
    exit 1
fi
exit "$rc"
