#!/bin/sh
# The runtime stage's check that hetrun runs on its base: every shared library that the installed
# binaries (PREFIX/bin/*, PREFIX/lib/*.so*) need resolves, and none comes from the base but the C
# and C++ runtimes and libcrypto (which every python3 brings), so no base needs a
# distribution-specific package for hetrun. Libraries of the venv (torch's, for the rendezvous
# plugin) resolve through their RPATH.
#   runtime-libs.sh PREFIX
# Exit: 0 all resolved and allowed; 1 a library missing or from the base but not allowed.
set -eu
prefix=$1
status=0
for f in "$prefix"/bin/* "$prefix"/lib/*.so*; do
  [ -f "$f" ] || continue
  head -c 4 "$f" | grep -q ELF || continue
  # The libraries that go along for the torch wing (spdlog, fmt) are loaded by it, beside theirs.
  case $(basename "$f") in
    libspdlog*|libfmt*) deps=$(LD_LIBRARY_PATH=$prefix/lib ldd "$f" 2>&1) ;;
    *) deps=$(ldd "$f" 2>&1) ;;
  esac || { echo "runtime-libs: ldd $f failed: $deps" >&2; status=1; continue; }
  missing=$(printf '%s\n' "$deps" | grep 'not found' || true)
  if [ -n "$missing" ]; then
    echo "runtime-libs: $f: $missing" >&2
    status=1
  fi
  # torch's libraries (the plugin, the torch wing link libtorch) bring their own needs.
  if printf '%s\n' "$deps" | grep -q 'libtorch'; then continue; fi
  foreign=$(printf '%s\n' "$deps" | grep '=> /' | grep -v " => $prefix/" | grep -v ' => /opt/venv/' |
    grep -Ev '^\s*(libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s|libcrypto)\.so' || true)
  if [ -n "$foreign" ]; then
    echo "runtime-libs: $f needs libraries of the base that hetrun must not:" >&2
    printf '%s\n' "$foreign" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "runtime-libs: every library of $prefix resolves; from the base only glibc, libstdc++, libgcc_s, libcrypto" >&2
exit $status
