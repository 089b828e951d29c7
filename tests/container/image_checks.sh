#!/usr/bin/env bash
# The training image as built (scripts/image, `make image`), one behaviour per call:
#   image_checks.sh build                     the runtime image and its non-root variant build
#                                             (ctest container.image, the container_image fixture)
#   image_checks.sh smoke-passes              the smoke stage passes on the image as built: torch
#                                             and every NVIDIA library in /opt/venv carry sm_80+sm_90
#   image_checks.sh smoke-refuses-sm90-only   with an sm_90-only extension built in the build stage
#                                             the smoke stage fails, on hetrun check's exit 80
#   image_checks.sh kernels-carry-sm80-sm90-ptx
#                                             hetrun inspect in the image: kernels/ has sm_80 and
#                                             sm_90 SASS and compute_90 PTX (PyPI's nvcc here)
#   image_checks.sh deepspeed-ops-prebuilt-runtime-compiles-nothing
#                                             DeepSpeed's fused_adam and cpu_adam load prebuilt in
#                                             the runtime stage (no compiler there; an op left out
#                                             fails to build, nothing lands in the extensions
#                                             folder); cpu_adam steps like torch's Adam; fused_adam
#                                             carries sm_80 and sm_90
#   image_checks.sh worker-runs-with-the-venv-python
#                                             a worker script mounted at run time runs under
#                                             hetrun --standalone with /opt/venv's python and torch
# Exit: 0 pass; 1 fail; 2 usage; 77 no container runtime can run here (scripts/image's reason).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
image=localhost/hetrun-trainer:dev
podman=$root/scripts/podman
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# The image (built by container.image; cached, so this takes seconds), else scripts/image's reason.
need_image() {
  "$root/scripts/image" --targets runtime >"$work/log" 2>&1
  local rc=$?
  ((rc == 0)) && return 0
  cat "$work/log"
  exit "$rc"
}

case ${1:-} in
  build)
    exec "$root/scripts/image" --targets runtime,nonroot ;;
  smoke-passes)
    "$root/scripts/image" --targets smoke >"$work/log" 2>&1
    rc=$?
    cat "$work/log"
    ((rc == 77)) && exit 77
    ((rc == 0)) || fail "the smoke stage failed on the image as built (exit $rc)"
    ;;
  smoke-refuses-sm90-only)
    "$root/scripts/image" --selftest-sm90-only >"$work/log" 2>&1
    rc=$?
    cat "$work/log"
    ((rc == 77)) && exit 77
    ((rc != 0)) || fail "the smoke stage passed with an sm_90-only extension in the venv"
    grep -q 'libhetrun_selftest_sm90_only.so' "$work/log" ||
      fail "hetrun check did not name the sm_90-only extension"
    grep -q 'smoke-test: FAIL: a kernel image is missing for one of 8.0,9.0 (exit 80)' "$work/log" ||
      fail "the smoke stage failed, but not on hetrun check's exit 80"
    ;;
  kernels-carry-sm80-sm90-ptx)
    need_image
    "$podman" run --rm "$image" inspect /opt/hetrun/lib/libhetrun_kernels.so >"$work/out" 2>&1 ||
      { cat "$work/out"; fail "hetrun inspect failed in the image"; }
    cat "$work/out"
    for want in 'sass +sm_80' 'sass +sm_90' 'ptx +compute_90'; do
      grep -Eq "$want" "$work/out" || fail "libhetrun_kernels.so has no '$want'"
    done
    ;;
  worker-runs-with-the-venv-python)
    need_image
    cat >"$work/train.py" <<'PY'
import os, sys
import torch
import hetrun
print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}: python {sys.executable}"
      f" torch {torch.__version__} cuda {torch.version.cuda} hetrun {hetrun.__version__}")
PY
    chmod 755 "$work" && chmod 644 "$work/train.py"
    "$podman" run --rm -v "$work:/w:ro" "$image" --standalone --nproc-per-node 2 /w/train.py \
      >"$work/out" 2>&1
    rc=$?
    cat "$work/out"
    ((rc == 0)) || fail "hetrun --standalone with a mounted worker exited $rc"
    for rank in 0 1; do
      grep -Eq "rank $rank of 2: python /opt/venv/bin/python3? torch 2\.11\.0\+cu130 cuda 13\.0 hetrun" \
        "$work/out" || fail "rank $rank did not run with /opt/venv's python and torch 2.11.0"
    done
    ;;
  deepspeed-ops-prebuilt-runtime-compiles-nothing)
    need_image
    # DS_ACCELERATOR=cuda: the accelerator the ops were built for (no GPU here: DeepSpeed would
    # pick its CPU accelerator). An empty TORCH_EXTENSIONS_DIR must stay empty.
    "$podman" run --rm -i -e DS_ACCELERATOR=cuda -e TORCH_EXTENSIONS_DIR=/tmp/ext \
      --entrypoint /opt/venv/bin/python "$image" - >"$work/out" 2>&1 <<'PY'
import glob, os, shutil
import torch
import deepspeed
from deepspeed.git_version_info import accelerator_name, installed_ops
from deepspeed.ops.op_builder import CPUAdamBuilder, FusedAdamBuilder, FusedLambBuilder
print("deepspeed", deepspeed.__version__, "built for", accelerator_name, "ops",
      sorted(n for n, ok in installed_ops.items() if ok))
print("compilers:", [c for c in ("c++", "g++", "gcc", "nvcc") if shutil.which(c)] or "none")
for builder in (FusedAdamBuilder(), CPUAdamBuilder()):
    module = builder.load(verbose=False)
    print("loaded", builder.name, "from", module.__file__)
# DeepSpeedCPUAdam (ZeRO-Offload's optimizer, the prebuilt cpu_adam op) against torch's Adam.
from deepspeed.ops.adam import DeepSpeedCPUAdam
torch.manual_seed(0)
a = torch.nn.Parameter(torch.randn(1000))
b = torch.nn.Parameter(a.detach().clone())
ds, ref = DeepSpeedCPUAdam([a], lr=1e-2, adamw_mode=False), torch.optim.Adam([b], lr=1e-2)
for step in range(5):
    g = torch.randn(1000)
    a.grad, b.grad = g.clone(), g.clone()
    ds.step()
    ref.step()
print(f"cpu_adam_max_rel={float((a - b).detach().abs().max() / b.detach().abs().max()):.3e}")
# An op left out of the build: the runtime stage cannot compile it.
try:
    FusedLambBuilder().load(verbose=False)
    print("fused_lamb: loaded (compiled at run time)")
except Exception as error:
    print("fused_lamb: not built, and the runtime cannot build it:", type(error).__name__)
print("extensions dir:", sorted(glob.glob("/tmp/ext/**/*.so", recursive=True)) or "no compiled op")
PY
    rc=$?
    cat "$work/out"
    ((rc == 0)) || fail "the DeepSpeed script failed in the runtime image (exit $rc)"
    grep -q "built for cuda ops \[.*'cpu_adam'.*'fused_adam'.*\]" "$work/out" ||
      fail "DeepSpeed's fused_adam and cpu_adam are not installed prebuilt for the cuda accelerator"
    grep -q '^compilers: none$' "$work/out" || fail "the runtime stage has a compiler"
    for op in fused_adam cpu_adam; do
      grep -q "^loaded $op from /opt/venv/.*/deepspeed/ops/.*${op}_op" "$work/out" ||
        fail "$op did not load from the prebuilt module in site-packages"
    done
    awk -F= '/^cpu_adam_max_rel=/ { exit !($2 < 1e-5) }' "$work/out" ||
      fail "DeepSpeedCPUAdam (prebuilt) differs from torch.optim.Adam"
    grep -q '^fused_lamb: not built, and the runtime cannot build it' "$work/out" ||
      fail "an op left out of the build was compiled at run time"
    grep -q '^extensions dir: no compiled op$' "$work/out" || fail "an op was compiled at run time"
    # The prebuilt CUDA op carries sm_80 and sm_90 (hetrun inspect, the smoke stage's reader).
    "$podman" run --rm --entrypoint /bin/sh "$image" -c \
      'hetrun inspect /opt/venv/lib/python3*/site-packages/deepspeed/ops/adam/fused_adam_op*.so' \
      >"$work/inspect" 2>&1 || { cat "$work/inspect"; fail "hetrun inspect of fused_adam_op failed"; }
    cat "$work/inspect"
    for want in 'sass +sm_80' 'sass +sm_90'; do
      grep -Eq "$want" "$work/inspect" || fail "fused_adam_op has no '$want'"
    done
    ;;
  *)
    printf 'usage: image_checks.sh build|smoke-passes|smoke-refuses-sm90-only|' >&2
    printf 'kernels-carry-sm80-sm90-ptx|worker-runs-with-the-venv-python|' >&2
    printf 'deepspeed-ops-prebuilt-runtime-compiles-nothing\n' >&2
    exit 2 ;;
esac
printf 'PASS: %s\n' "$1"
