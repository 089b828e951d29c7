#!/bin/sh
# The CUDA toolkit of the image's build stage, at DEST (default /opt/cuda): the base's toolkit
# where it has one (nvidia/cuda:*-devel: /usr/local/cuda), else one assembled in DEST-pypi from
# NVIDIA's PyPI wheels: the compiler at NVCC_PYPI_VERSION (nvidia-cuda-nvcc, its crt headers,
# nvidia-nvvm, CCCL's headers) and the CUDA runtime at the version torch installed in VENV, plus links to the
# headers and libraries of the CUDA wheels torch brought (cuBLAS, NVRTC, ...), so CMake's
# FindCUDAToolkit and torch's own CMake configuration find a toolkit. Build stage only.
#   cuda-toolkit.sh VENV NVCC_PYPI_VERSION [DEST]
# Exit: 0 DEST/bin/nvcc runs; 1 no toolkit could be set up; 2 usage.
set -eu
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: cuda-toolkit.sh VENV NVCC_PYPI_VERSION [DEST]" >&2
  exit 2
fi
venv=$1 nvcc_version=$2 dest=${3:-/opt/cuda}
if [ -x /usr/local/cuda/bin/nvcc ]; then
  ln -sfn /usr/local/cuda "$dest"
  echo "cuda-toolkit: the base's /usr/local/cuda" >&2
else
  major=${nvcc_version%%.*}
  runtime=$("$venv/bin/python" -c \
    "import importlib.metadata as m; print(m.version('nvidia-cuda-runtime'))" 2>/dev/null || true)
  torch_cuda=$("$venv/bin/python" -c "import nvidia, os; print(os.path.join(nvidia.__path__[0], 'cu$major'))" \
    2>/dev/null || true)
  if [ -z "$runtime" ] || [ ! -d "$torch_cuda" ]; then
    echo "cuda-toolkit: no nvidia-cuda-runtime ($runtime) or nvidia/cu$major in $venv (torch's CUDA) to match" >&2
    exit 1
  fi
  . "$(dirname "$0")/pip-source.sh"
  "$venv/bin/pip" install --quiet --no-deps --target "$dest-pypi" \
    "nvidia-cuda-nvcc==$nvcc_version" "nvidia-cuda-crt==$nvcc_version" \
    "nvidia-nvvm==$nvcc_version" "nvidia-cuda-runtime==$runtime" \
    "nvidia-cuda-cccl==$(echo "$nvcc_version" | cut -d. -f1-2).*"
  tree=$dest-pypi/nvidia/cu$major
  # torch's CUDA wheels' headers and libraries, linked where they are missing (GNU cp -s).
  cp -rsn "$torch_cuda/include/." "$tree/include/"
  cp -rsn "$torch_cuda/lib/." "$tree/lib/"
  # The names a link step asks for: libX.so beside libX.so.N; nvcc.profile links from lib64/.
  for lib in "$tree"/lib/lib*.so.*; do
    base=${lib%%.so.*}.so
    [ -e "$base" ] || ln -s "$(basename "$lib")" "$base"
  done
  ln -sfn lib "$tree/lib64"
  # CUDA 13's headers include <nv/target> (CCCL), which the toolkit also has at include/nv.
  [ -e "$tree/include/nv" ] || ln -s cccl/nv "$tree/include/nv"
  # CMake 3.25.1 (Debian 12's) sets a property on CUDA::nvToolsExt without checking that the
  # library was found, which a toolkit without libnvToolsExt (CUDA 13's) fails; CMake 3.25.2's fix.
  for module in /usr/share/cmake-3.25/Modules/FindCUDAToolkit.cmake; do
    [ -f "$module" ] && sed -i 's/^\( *\)if(CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)$/\1if(TARGET CUDA::nvToolsExt AND CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)/' "$module"
  done
  ln -sfn "$tree" "$dest"
  echo "cuda-toolkit: PyPI's nvidia-cuda-nvcc $nvcc_version, cudart $runtime, torch's CUDA libraries" >&2
fi
"$dest/bin/nvcc" --version | tail -n 2
