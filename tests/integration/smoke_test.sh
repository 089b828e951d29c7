#!/usr/bin/env bash
# docker/smoke-test.sh against a plain `cmake --install` prefix (no Docker): fixture extensions
# built with nvcc for sm_90 only must fail with 80; built for 8.0;9.0+PTX they must pass.
# Usage: smoke_test.sh BUILD_DIR SOURCE_DIR CMAKE NVCC
set -euo pipefail
build_dir=$1 source_dir=$2 cmake=$3 nvcc=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$cmake" --install "$build_dir" --prefix "$work/prefix" >/dev/null
hetrun=$work/prefix/bin/hetrun
if ! "$hetrun" check --help >/dev/null 2>&1; then
  echo "SKIP: this build's hetrun has no 'check' subcommand yet; smoke-test.sh needs it" >&2
  exit 77
fi

cat >"$work/ext.cu" <<'CU'
// A stand-in for a torch extension: one kernel and a host launcher.
__global__ void scale(float* x, float k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= k;
}
extern "C" void launch_scale(float* x, float k, int n) { scale<<<(n + 255) / 256, 256>>>(x, k, n); }
CU
mkdir -p "$work/sm90only" "$work/covered"
# What `TORCH_CUDA_ARCH_LIST=9.0` produces: SASS for sm_90 only, no PTX an A100 could JIT.
"$nvcc" -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 \
  -o "$work/sm90only/libext_sm90.so" "$work/ext.cu"
# What `TORCH_CUDA_ARCH_LIST="8.0;9.0+PTX"` produces.
"$nvcc" -shared -Xcompiler -fPIC -gencode arch=compute_80,code=sm_80 \
  -gencode arch=compute_90,code='[sm_90,compute_90]' \
  -o "$work/covered/libext_covered.so" "$work/ext.cu"

smoke=$source_dir/docker/smoke-test.sh
status=0
expect() {
  local want=$1 what=$2
  shift 2
  local rc=0
  env -i PATH=/usr/bin:/bin HETRUN="$hetrun" SMOKE_TORCH=0 "$@" >"$work/out" 2>&1 || rc=$?
  if [[ $rc != "$want" ]]; then
    echo "FAIL: $what: exit $rc, expected $want" >&2
    cat "$work/out" >&2
    status=1
  else
    echo "ok: $what (exit $rc)"
  fi
}
expect 80 "sm_90-only extension fails with 80" "$smoke" "$work/sm90only"
expect 0 "8.0;9.0+PTX extension passes" "$smoke" "$work/covered"
expect 80 "one bad directory among good ones fails" "$smoke" "$work/covered" "$work/sm90only"
expect 0 "SMOKE_TORCH_LIB is scanned instead of --torch" \
  env SMOKE_TORCH_LIB="$work/covered" "$smoke" "$work/covered"
expect 2 "a missing scan directory is a usage error" "$smoke" "$work/absent"
expect 2 "a bad SMOKE_TORCH is a usage error" env SMOKE_TORCH=maybe "$smoke" "$work/covered"
exit $status
