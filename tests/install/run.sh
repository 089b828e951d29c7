#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then configures, builds and runs an
# out-of-tree project that does find_package(hetrun) and links hetrun::runtime. With a 6th
# argument (examples/trainer) and torch, also builds the example trainer out of tree against the
# prefix, as a user's trainer would be, and runs it for a few steps as a single process.
# CONSUMER_CXX_FLAGS / CONSUMER_LINKER_FLAGS (from the build tree: the sanitizer flags of an asan
# tree) are given to the out-of-tree projects too.
set -euo pipefail
build_dir=$1 consumer_src=$2 cmake=$3 cxx=$4 torch_prefix=${5:-} trainer_src=${6:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-DCMAKE_CXX_FLAGS="${CONSUMER_CXX_FLAGS:-}" -DCMAKE_EXE_LINKER_FLAGS="${CONSUMER_LINKER_FLAGS:-}")
quiet() {  # runs "$@" with its output in a log, shown only when it fails
  "$@" >"$work/step.log" 2>&1 || { local rc=$?; cat "$work/step.log"; echo "failed ($rc): $*"; return "$rc"; }
}
quiet "$cmake" --install "$build_dir" --prefix "$work/prefix"
test -x "$work/prefix/bin/hetrun"
"$work/prefix/bin/hetrun" --version
quiet "$cmake" -S "$consumer_src" -B "$work/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix;$torch_prefix" -DCMAKE_BUILD_TYPE=Release "${flags[@]}"
quiet "$cmake" --build "$work/build"
"$work/build/consumer" | tee "$work/consumer.txt"
if grep -q hetrun_torch "$work/prefix"/lib*/cmake/hetrun/*.cmake; then
  grep -q 'with libtorch [0-9]' "$work/consumer.txt" || { echo "the package has hetrun::torch but the consumer did not see it"; exit 1; }
fi
if [[ -n $trainer_src && -n $torch_prefix ]] && grep -q hetrun_torch "$work/prefix"/lib*/cmake/hetrun/*.cmake; then
  quiet "$cmake" -S "$trainer_src" -B "$work/trainer" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$work/prefix;$torch_prefix" -DCMAKE_BUILD_TYPE=Release "${flags[@]}"
  quiet "$cmake" --build "$work/trainer"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" OMP_NUM_THREADS=1 \
    "$work/trainer/hetrun_trainer" --steps 3 \
    --window 1 --warmup 0 --batch 2 --seq 16 --dim 16 --summary "$work/trainer.summary"
  grep -q '^shares_final=2$' "$work/trainer.summary"
fi
