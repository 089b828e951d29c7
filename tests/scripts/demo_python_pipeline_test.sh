#!/usr/bin/env bash
# scripts/demo_python_pipeline --quick under the real `hetrun run`: the demo runs end to end,
# reports the split before and after, and the pipeline's losses (a live move or not) equal the
# one-process reference's within 1e-5. Speed figures are printed, never asserted.
#   demo_python_pipeline_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { cat "$out"; echo "FAIL: $*" >&2; exit 1; }
"$src/.venv/bin/python" -c "import hetrun.pipelining" || fail "hetrun.pipelining does not import"
HETRUN_MASTER_PORT=$(python3 -c '
import random, socket
for _ in range(64):  # below the ephemeral range, as tests/testing/free_port.cc
    p = random.randint(20000, 32767)
    try:
        socket.socket().bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass
')
export HETRUN_MASTER_PORT
"$src/scripts/demo_python_pipeline" "$build" --quick > "$out" 2>&1 || fail "demo exited $?"
grep -Eq '^split 2,6 -> [0-9]+,[0-9]+ in [0-9]+ move' "$out" || fail "no split line"
worst=$(sed -n 's/^loss: largest relative difference over [0-9]* steps \([^ ]*\) .*/\1/p' "$out")
[[ -n $worst ]] || fail "no loss line"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 1e-5 else 1)" "$worst" ||
  fail "losses differ from the reference by $worst"
cat "$out"
