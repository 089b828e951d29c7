#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then configures, builds and runs an
# out-of-tree project that does find_package(hetrun) and links hetrun::runtime. With a 6th
# argument (examples/trainer) and torch, also builds the example trainer out of tree against the
# prefix, as a user's trainer would be, and runs it for a few steps as a single process.
set -euo pipefail
build_dir=$1 consumer_src=$2 cmake=$3 cxx=$4 torch_prefix=${5:-} trainer_src=${6:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -x "$work/prefix/bin/hetrun"
"$work/prefix/bin/hetrun" --version
"$cmake" -S "$consumer_src" -B "$work/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix;$torch_prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
"$cmake" --build "$work/build" >/dev/null
"$work/build/consumer"
if [[ -n $trainer_src && -n $torch_prefix ]] && grep -q hetrun_torch "$work/prefix"/lib*/cmake/hetrun/*.cmake; then
  "$cmake" -S "$trainer_src" -B "$work/trainer" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$work/prefix;$torch_prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
  "$cmake" --build "$work/trainer" >/dev/null
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" OMP_NUM_THREADS=1 \
    "$work/trainer/hetrun_trainer" --steps 3 \
    --window 1 --warmup 0 --batch 2 --seq 16 --dim 16 --summary "$work/trainer.summary"
  grep -q '^shares_final=2$' "$work/trainer.summary"
fi
