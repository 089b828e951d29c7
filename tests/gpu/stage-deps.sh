#!/usr/bin/env bash
# Stages hetrun's C++ build dependencies for a machine that has CMake, ninja, nvcc and torch but
# neither these libraries nor a network (the H200 validation machine; device KINDS.md): downloads
# the Debian packages with apt-get on this machine and unpacks them into DIR/usr. Header-only and
# shared libraries keep their relative links; the CMake package files there are relocatable.
# tests/gpu/run.sh uses DIR (default SOURCE/.gpu-deps) by itself when it exists.
#
#   tests/gpu/stage-deps.sh [DIR]      (then carry DIR with the working tree: about 10 MiB)
#
# Exit: 0 staged, 1 a download or unpack failed, 64 usage error.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
if (($# > 1)) || [[ ${1:-} == -* ]]; then
  sed -n '7,9p' "$0" | sed 's/^# \{0,1\}//' >&2
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
rm -rf "$dir"
mv "$dir.new" "$dir"
echo "stage-deps.sh: staged into $dir ($(du -sh "$dir" | cut -f1)); see $dir/STAGED"
