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
  *)
    printf 'usage: image_checks.sh build|smoke-passes|smoke-refuses-sm90-only|' >&2
    printf 'kernels-carry-sm80-sm90-ptx|worker-runs-with-the-venv-python\n' >&2
    exit 2 ;;
esac
printf 'PASS: %s\n' "$1"
