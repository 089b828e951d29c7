#!/bin/sh
# DeepSpeed in the image's build stage, its ops compiled ahead (docs/how-to/deepspeed.md,
# "In the training image"): the runtime stage has no compiler, and DeepSpeed would otherwise
# compile an op (FusedAdam for its "Adam" optimizer, DeepSpeedCPUAdam for ZeRO-Offload) at the
# first use in every pod, or fail there. Each op named is built for the CUDA accelerator with the
# stage's TORCH_CUDA_ARCH_LIST (sm_80 + sm_90 SASS, compute_90 PTX; the smoke stage checks them
# like every other kernel image of the venv), then the installed set and torch are checked.
#   deepspeed.sh VENV VERSION REQUIREMENTS OP...    (OP: a DS_BUILD_<OP> name, e.g. FUSED_ADAM)
# Environment: CUDA_HOME (the stage's toolkit), TORCH_CUDA_ARCH_LIST, BUILD_JOBS (default 2).
# Exit: 0 installed with every op named; 1 a step failed; 2 usage.
set -eu
if [ $# -lt 4 ]; then
  echo "usage: deepspeed.sh VENV VERSION REQUIREMENTS OP..." >&2
  exit 2
fi
venv=$1 version=$2 requirements=$3
shift 3
torch_before=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
"$venv/bin/pip" install --quiet --no-deps -r "$requirements"
build_env="DS_ACCELERATOR=cuda DS_BUILD_OPS=0 MAX_JOBS=${BUILD_JOBS:-2}"
names=""
for op in "$@"; do
  case $op in
    *[!A-Z0-9_]*|'') echo "deepspeed.sh: '$op' is not a DS_BUILD_ name (e.g. FUSED_ADAM)" >&2; exit 2 ;;
  esac
  build_env="$build_env DS_BUILD_$op=1"
  names="$names $(echo "$op" | tr 'A-Z' 'a-z')"
done
echo "deepspeed.sh: deepspeed==$version with$names for TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-?}" >&2
# No build isolation (setup.py imports the venv's torch), no dependencies (installed above: torch
# stays as it is).
env $build_env "$venv/bin/pip" install --quiet --no-deps --no-build-isolation --no-cache-dir \
  "deepspeed==$version"
"$venv/bin/python" - "$torch_before" $names <<'PY'
import sys
import torch
from deepspeed.git_version_info import accelerator_name, installed_ops
want_torch, names = sys.argv[1], sys.argv[2:]
if torch.__version__ != want_torch:
    sys.exit(f"deepspeed.sh: torch changed from {want_torch} to {torch.__version__}")
missing = [n for n in names if not installed_ops.get(n)]
if accelerator_name != "cuda" or missing:
    sys.exit(f"deepspeed.sh: ops built for {accelerator_name!r}, missing {missing}")
print("deepspeed.sh: installed ops:", ", ".join(n for n, ok in sorted(installed_ops.items()) if ok),
      f"(accelerator {accelerator_name}; torch {torch.__version__})", file=sys.stderr)
PY
