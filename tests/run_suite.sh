#!/usr/bin/env bash
# The whole suite as `make test` runs it: one pytest run over three worker processes (pytest-xdist,
# `--dist loadfile`: all tests of a file run in one worker, in order, on that worker's services; each worker
# starts the services its files ask for on free loopback ports). Files are handed to whichever worker is free,
# the end-to-end files first (largest first: the long pipelines), then the integration and unit files, which
# fill in around them, so no worker is left alone with a long tail. Extra arguments go to pytest (`-k`, `-x`,
# ...); a run in which they select nothing counts as passed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
WORKERS=${CDC_TEST_WORKERS:-3}
mapfile -t files < <(
  ls -S tests/e2e/test_*.py
  ls -S tests/integration/test_*.py
  find tests/unit -name 'test_*.py' | sort
)
# --no-loadscope-reorder: in this order (xdist's default hands out the files with the most tests first)
"$PY" -m pytest -n "$WORKERS" --dist loadfile --no-loadscope-reorder "${files[@]}" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then exit 0; fi  # 5: nothing selected
exit "$rc"
