#!/usr/bin/env bash
# Stages hetrun's C++ build dependencies for a machine that has CMake, ninja, nvcc and torch but
# neither these libraries nor a network (the H200 validation machine; device KINDS.md): downloads
# the Debian packages with apt-get on this machine and unpacks them into DIR/usr. Header-only and
# shared libraries keep their relative links; the CMake package files there are relocatable.
# tests/gpu/run.sh uses DIR (default SOURCE/.gpu-deps) by itself when it exists.
#
# Also DIR/wheels: DeepSpeed and the requirements the GPU machine lacks, for run.sh's deepspeed step.
#
#   tests/gpu/stage-deps.sh [DIR]      (then carry DIR with the working tree: about 13 MiB)
#
# Exit: 0 staged, 1 a download or unpack failed, 64 usage error.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
if (($# > 1)) || [[ ${1:-} == -* ]]; then
  sed -n '8,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 64
fi
dir=${1:-$src/.gpu-deps}
# Development packages (headers, CMake files, link names) and the shared libraries they point at.
packages=(libfmt-dev libfmt9 libspdlog-dev libspdlog1.10 nlohmann-json3-dev libcxxopts-dev
          libgtest-dev libgmock-dev libyaml-cpp-dev libyaml-cpp0.7 libzstd-dev libzstd1
          liblz4-dev liblz4-1)
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || {
  echo "stage-deps.sh: needs apt-get and dpkg-deb (a Debian or Ubuntu machine)" >&2
  exit 1
}
debs=$(mktemp -d "${TMPDIR:-/tmp}/hetrun-debs.XXXXXX")
trap 'rm -rf "$debs"' EXIT
echo "stage-deps.sh: downloading ${#packages[@]} packages"
(cd "$debs" && apt-get download "${packages[@]}") >"$debs/download.log" 2>&1 || {
  cat "$debs/download.log" >&2
  echo "stage-deps.sh: apt-get download failed (run apt-get update?)" >&2
  exit 1
}
rm -rf "$dir.new"
mkdir -p "$dir.new"
for deb in "$debs"/*.deb; do
  dpkg-deb -x "$deb" "$dir.new"
done
# Documentation and GoogleTest's sources are not needed to build.
rm -rf "$dir.new/usr/share/doc" "$dir.new/usr/share/lintian" "$dir.new/usr/share/man" "$dir.new/usr/src"
{
  echo "# staged by tests/gpu/stage-deps.sh on $(date -u +%FT%TZ) from $(. /etc/os-release && echo "$PRETTY_NAME")"
  for deb in "$debs"/*.deb; do dpkg-deb -f "$deb" Package Version | paste -sd' '; done
} >"$dir.new/STAGED"
# Python wheels for run.sh's deepspeed step: DeepSpeed (an sdist: built here into a wheel with no
# ops, against .venv's torch, for the CUDA accelerator) and the requirements the GPU machine's
# python3 (3.12) lacks (device KINDS.md's package list has the others).
venv_python=$src/.venv/bin/python
if [[ -x $venv_python ]] && "$venv_python" -c 'import torch' 2>/dev/null; then
  echo "stage-deps.sh: building the deepspeed wheel and downloading its missing requirements"
  mkdir -p "$dir.new/wheels"
  DS_ACCELERATOR=cuda DS_BUILD_OPS=0 "$venv_python" -m pip wheel --quiet --no-deps \
    --no-build-isolation -w "$dir.new/wheels" deepspeed==0.19.8 >"$debs/wheels.log" 2>&1 &&
  "$venv_python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$dir.new/wheels" hjson==3.1.0 pydantic==2.14.4 pydantic-core==2.50.5 \
    annotated-types==0.8.0 typing-inspection==0.4.5 >>"$debs/wheels.log" 2>&1 || {
    cat "$debs/wheels.log" >&2
    echo "stage-deps.sh: staging the deepspeed wheels failed" >&2
    exit 1
  }
  ls "$dir.new/wheels" | sed 's/^/  wheel /' >>"$dir.new/STAGED"
else
  echo "stage-deps.sh: no .venv with torch (scripts/setup): the deepspeed wheels are not staged" >&2
fi
rm -rf "$dir"
mv "$dir.new" "$dir"
echo "stage-deps.sh: staged into $dir ($(du -sh "$dir" | cut -f1)); see $dir/STAGED"
