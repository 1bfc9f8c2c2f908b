#!/usr/bin/env bash
# Installs everything the tests need, then runs the test suite. Exit code 5 (no tests collected) fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh dev
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that is a failure" >&2
    exit 1
fi
exit "$rc"
