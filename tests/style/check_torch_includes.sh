#!/usr/bin/env bash
# Fails when a translation unit outside the torch wing includes a libtorch header.
# Allowed: runtime/torch/, launcher/rendezvous/, examples/trainer/, tests/runtime/torch/, tests/gpu/,
# and bench/ddp_compare_worker.cc (hetrun's libtorch side of the DDP comparison).
set -euo pipefail
root=${1:?usage: check_torch_includes.sh SOURCE_DIR}
cd "$root"
pattern='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](torch|ATen|c10|caffe2)/'
hits=$(git ls-files -co --exclude-standard -- '*.h' '*.cc' '*.cu' '*.cuh' '*.cpp' '*.hpp' 2>/dev/null |
  grep -vE '^(runtime/torch/|launcher/rendezvous/|examples/trainer/|tests/runtime/torch/|tests/gpu/|bench/ddp_compare_worker.cc$)' |
  xargs -r grep -lE "$pattern" || true)
if [[ -n $hits ]]; then
  echo "libtorch headers included outside the torch wing:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "torch headers confined to runtime/torch, launcher/rendezvous, examples/trainer"
