#!/bin/sh
# Refuses a CUDA mismatch in the training image: the toolkit that compiles the image's kernels
# and extensions (NVCC), the CUDA_VERSION build argument (the nvidia/cuda base's tag) and the
# CUDA build of the torch installed in PYTHON's environment must name one major.minor, or
# extensions compile against one CUDA's headers and link a torch built for another.
#   cuda-match.sh CUDA_VERSION NVCC PYTHON
# Exit: 0 all three agree; 1 a mismatch (each named) or a version that cannot be read; 2 usage.
set -eu
if [ $# -ne 3 ]; then
  echo "usage: cuda-match.sh CUDA_VERSION NVCC PYTHON" >&2
  exit 2
fi
want=$(printf '%s\n' "$1" | sed -n 's/^\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
nvcc=$("$2" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
# torch.version.cuda, read from torch/version.py without importing torch.
torch=$("$3" -c 'import importlib.util, pathlib, re, sys
spec = importlib.util.find_spec("torch")
if spec is None: sys.exit(1)
text = (pathlib.Path(spec.origin).parent / "version.py").read_text()
m = re.search(r"^cuda\s*(?::[^=]*)?=\s*[\x27\x22]([0-9.]+)[\x27\x22]", text, re.M)
print(".".join(m.group(1).split(".")[:2]) if m else "")' 2>/dev/null || true)
for pair in "CUDA_VERSION:$want:$1" "nvcc:$nvcc:$2" "torch.version.cuda:$torch:$3"; do
  name=${pair%%:*} rest=${pair#*:}
  if [ -z "${rest%%:*}" ]; then
    echo "cuda-match: cannot read the CUDA version of $name (${rest#*:})" >&2
    exit 1
  fi
done
if [ "$want" != "$nvcc" ] || [ "$want" != "$torch" ]; then
  echo "cuda-match: CUDA mismatch: CUDA_VERSION $1 ($want), nvcc $nvcc, torch.version.cuda $torch;" \
       "pick a base (CUDA_VERSION) and torch of one CUDA release" >&2
  exit 1
fi
echo "cuda-match: CUDA $want everywhere (CUDA_VERSION $1, nvcc, torch)" >&2
