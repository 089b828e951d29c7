#!/usr/bin/env bash
# ctest scripts.demo_parts: `make demo PARTS=...` (scripts/demo's DEMO_PARTS) runs the parts named
# and no other, takes commas or spaces, and refuses an unknown part with 64 before running any.
# Usage: demo_parts_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=${1:?usage: demo_parts_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: demo_parts_test.sh SOURCE_DIR BUILD_DIR}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }

DEMO_PARTS=env,bogus "$src/scripts/demo" "$build" >"$out" 2>&1
rc=$?
((rc == 64)) || fail "an unknown part exited $rc, expected 64"
grep -q "demo: unknown part 'bogus' in DEMO_PARTS" "$out" || fail "the refusal does not name the part"
grep -q 'hetrun --version' "$out" && fail "a part ran before the refusal"

DEMO_PARTS=env "$src/scripts/demo" "$build" >"$out" 2>&1 || fail "DEMO_PARTS=env exited $?"
grep -q 'env --nproc-per-node auto' "$out" || fail "the env part did not run"
grep -Eq '^\$ .*( run --nproc-per-node|demo_pipeline|train_)' "$out" && fail "a part not named ran"
echo "PASS: DEMO_PARTS runs the parts named and refuses an unknown one"
