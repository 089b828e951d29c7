#!/usr/bin/env bash
# ctest integration.gpu_validation_dry_run: tests/gpu/run.sh --dry-run on the given build tree
# (reused, never rebuilt) must exit 0 and write a summary.json whose every GPU step is
# "skipped (dry run)", and a log; bad arguments must be usage errors (64).
# Usage: dry_run_test.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: dry_run_test.sh BUILD_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-$(command -v python3)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

PYTHON=$python "$here/run.sh" --dry-run --out "$tmp/out" --build-dir "$build" >"$tmp/stdout" 2>&1 || {
  echo "run.sh --dry-run exited $?:"; cat "$tmp/stdout"; exit 1; }
"$python" "$here/gpu_checks.py" validate "$tmp/out/summary.json" --dry-run
[[ -s $tmp/out/gpu-validation.log ]] || { echo "no log written"; exit 1; }
grep -q "== step tools" "$tmp/out/gpu-validation.log" || { echo "log lacks the steps"; exit 1; }

set +e
"$here/run.sh" --dry-run --out "$tmp/bad" --bogus >/dev/null 2>&1
rc=$?
set -e
[[ $rc == 64 ]] || { echo "an unknown argument exited $rc, expected 64"; exit 1; }
set +e
"$here/run.sh" --dry-run --out "$tmp/bad" --deps "$tmp/no-such-deps" >/dev/null 2>&1
rc=$?
set -e
[[ $rc == 64 ]] || { echo "a --deps folder without usr/include exited $rc, expected 64"; exit 1; }

# Staged dependencies are put first in CMAKE_PREFIX_PATH and recorded in the summary.
mkdir -p "$tmp/deps/usr/include"
echo "# staged by a test" >"$tmp/deps/STAGED"
PYTHON=$python "$here/run.sh" --dry-run --out "$tmp/deps-out" --build-dir "$build" \
  --deps "$tmp/deps" >"$tmp/stdout" 2>&1 || { echo "run.sh --deps exited $?:"; cat "$tmp/stdout"; exit 1; }
grep -q -- "-DCMAKE_PREFIX_PATH=$tmp/deps/usr" "$tmp/stdout" ||
  { echo "the configure command lacks the staged prefix:"; cat "$tmp/stdout"; exit 1; }
grep -q '"deps_staged": "# staged by a test"' "$tmp/deps-out/summary.json" ||
  { echo "summary.json lacks build.deps_staged:"; cat "$tmp/deps-out/summary.json"; exit 1; }
echo "dry run: ok"
