#!/usr/bin/env bash
# scripts/demo_pipeline --quick under the real `hetrun run`: the demo runs end to end, its report
# reads the trainer's window lines, the run's measurements.json and `hetrun plan --measured`, and
# the pipeline's losses (live moves or not) equal the one-process reference's. Speed figures are
# printed, never asserted.
#   demo_pipeline_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { cat "$out"; echo "FAIL: $*" >&2; exit 1; }
# A free port for the job's rendezvous: ctest runs other `hetrun run` tests beside this one, and
# the default (torchrun's 29500) may be taken.
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
"$src/scripts/demo_pipeline" "$build" --quick > "$out" 2>&1 || fail "demo_pipeline exited $?"
grep -Eq '^1 +9,25 +[0-9.]+,[0-9.]+ +[0-9.]+ +[0-9.]+ ' "$out" ||
  fail "no first window row of the hand split 9,25 in the table"
grep -Eq '^split 9,25 -> [0-9]+,[0-9]+ in [0-9]+ move' "$out" || fail "no split line"
grep -Eq 'final / optimum = [0-9]+\.[0-9]+$' "$out" || fail "no final / optimum figure"
worst=$(sed -n 's/^loss: .*largest relative difference over [0-9]* steps //p' "$out")
[[ -n $worst ]] || fail "no loss line"
awk -v x="$worst" 'BEGIN { exit !(x <= 1e-5) }' || fail "losses differ from the reference by $worst"
grep -E '^(split|  optimum|loss)' "$out"
