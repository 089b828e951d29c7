#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then configures, builds and runs an
# out-of-tree project that does find_package(hetrun) and links hetrun::runtime.
set -euo pipefail
build_dir=$1 consumer_src=$2 cmake=$3 cxx=$4 torch_prefix=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -x "$work/prefix/bin/hetrun"
"$work/prefix/bin/hetrun" --version
"$cmake" -S "$consumer_src" -B "$work/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix;$torch_prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
"$cmake" --build "$work/build" >/dev/null
"$work/build/consumer"
