# Sourced by docker/Dockerfile's pip steps: where pip takes wheels from. With the build-time
# volume /wheelhouse (scripts/image mounts ~/.cache/hetrun/wheelhouse there, filled once with
# `pip download`), from it alone: nothing is downloaded again. Without it (a plain `docker build`
# in CI), from the package index, through the build's pip cache mount.
if [ -d /wheelhouse ] && ls /wheelhouse/*.whl >/dev/null 2>&1; then
  export PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheelhouse
  echo "pip: wheels from the build-time volume /wheelhouse only (no download)" >&2
else
  unset PIP_NO_INDEX PIP_FIND_LINKS
  echo "pip: no /wheelhouse volume; wheels from the package index" >&2
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
