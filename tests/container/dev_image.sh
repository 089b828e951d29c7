#!/usr/bin/env bash
# Builds the container tests' bare development image (HETRUN_TEST_IMAGE=dev, tests/container/
# runtime.py): Debian 12 minbase with python3 and the libraries this build's hetrun links, no
# hetrun inside (the tests bind-mount the checkout, its build and .venv at their own paths).
# For working on the container tests before `make image` exists; the tests use the real image
# (localhost/hetrun-trainer:dev) by default. Needs mmdebstrap and apt access (scripts/setup).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
image=localhost/hetrun-containers-dev:bookworm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# /root traversable: the non-root variant (uid 1000) reaches a venv whose python lives under it.
mmdebstrap --variant=minbase --customize-hook='chmod 755 "$1/root"' \
  --include=python3,libspdlog1.10,libfmt9,libssl3,libzstd1,liblz4-1,libyaml-cpp0.7,libgomp1 \
  bookworm "$work/rootfs.tar"
"$root/scripts/podman" import --change 'ENTRYPOINT ["/opt/hetrun/bin/hetrun"]' \
  "$work/rootfs.tar" "$image"
printf 'dev_image.sh: built %s\n' "$image"
