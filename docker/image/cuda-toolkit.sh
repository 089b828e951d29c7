#!/bin/sh
# The CUDA compiler of the image's build stage, at /opt/cuda: the base's toolkit where it has one
# (nvidia/cuda:*-devel: /usr/local/cuda), else NVIDIA's PyPI wheels of the compiler at
# NVCC_PYPI_VERSION (nvcc, its crt headers, NVVM) with the CUDA runtime's headers and static
# library at the version torch installed in VENV, unpacked into /opt/cuda-pypi (build stage only).
#   cuda-toolkit.sh VENV NVCC_PYPI_VERSION
# Exit: 0 /opt/cuda/bin/nvcc runs; 1 no toolkit could be set up; 2 usage.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: cuda-toolkit.sh VENV NVCC_PYPI_VERSION" >&2
  exit 2
fi
venv=$1 nvcc_version=$2
if [ -x /usr/local/cuda/bin/nvcc ]; then
  ln -sfn /usr/local/cuda /opt/cuda
  echo "cuda-toolkit: the base's /usr/local/cuda" >&2
else
  major=${nvcc_version%%.*}
  runtime=$("$venv/bin/python" -c \
    "import importlib.metadata as m; print(m.version('nvidia-cuda-runtime'))" 2>/dev/null || true)
  if [ -z "$runtime" ]; then
    echo "cuda-toolkit: no nvidia-cuda-runtime in $venv (torch's CUDA runtime) to match" >&2
    exit 1
  fi
  . "$(dirname "$0")/pip-source.sh"
  "$venv/bin/pip" install --quiet --no-deps --target /opt/cuda-pypi \
    "nvidia-cuda-nvcc==$nvcc_version" "nvidia-cuda-crt==$nvcc_version" \
    "nvidia-nvvm==$nvcc_version" "nvidia-cuda-runtime==$runtime"
  ln -sfn "/opt/cuda-pypi/nvidia/cu$major" /opt/cuda
  echo "cuda-toolkit: PyPI's nvidia-cuda-nvcc $nvcc_version, cudart $runtime" >&2
fi
/opt/cuda/bin/nvcc --version | tail -n 2
