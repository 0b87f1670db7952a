#!/usr/bin/env bash
# The whole suite as `make test` runs it: two pytest processes side by side, the end-to-end tier (long
# pipelines that mostly wait on Spark and the services) and the unit and integration tiers. Each process
# starts its own services on free loopback ports. The e2e tier's report is printed when both have ended;
# the exit status is non-zero when either tier failed. Extra arguments go to both (`-k`, `-x`, ...): a tier
# in which they select nothing counts as passed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
e2e_log=$(mktemp)
trap 'rm -f "$e2e_log"' EXIT

"$PY" -m pytest tests/e2e "$@" >"$e2e_log" 2>&1 &
e2e=$!
"$PY" -m pytest tests/unit tests/integration "$@"
rest=$?
wait "$e2e"
e2e_rc=$?
echo
echo "================================ tests/e2e ================================"
cat "$e2e_log"
ok() { [ "$1" -eq 0 ] || [ "$1" -eq 5 ]; }  # 5: no test selected in this tier
if ok "$rest" && ok "$e2e_rc"; then exit 0; fi
echo "failed: unit+integration exit $rest, e2e exit $e2e_rc" >&2
exit 1
