#!/usr/bin/env python3
"""Runs one container test (tests/container/, pytest) for its ctest entry, or skips it saying why.

usage: run.py FILE::TEST

Exit 77 (ctest's SKIP_RETURN_CODE) with a message on stderr when no container runtime can run
here: podman missing, `scripts/podman info` failing, or the test image not built. Otherwise
pytest's exit status; a test that pytest skips or does not collect fails the entry, so an entry
is green only when its test ran and passed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from runtime import PODMAN, profile_from_env  # noqa: E402

SKIP = 77


def skip(reason: str) -> int:
    print(f"SKIPPED (no container runtime can run this test here): {reason}", file=sys.stderr)
    return SKIP


def main(argv: list[str]) -> int:
    if len(argv) != 2 or "::" not in argv[1]:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        info = subprocess.run([str(PODMAN), "info"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return skip(f"scripts/podman info: {error}")
    if info.returncode != 0:
        last = (info.stderr.strip().splitlines() or ["(no message)"])[-1]
        return skip(f"scripts/podman info exited {info.returncode}: {last}")
    profile = profile_from_env()
    for image in profile.images():
        exists = subprocess.run([str(PODMAN), "image", "exists", image], capture_output=True)
        if exists.returncode != 0:
            return skip(f"image {image} is not built ({profile.how_to_build})")
    with tempfile.TemporaryDirectory(prefix="hetrun-container-test-") as folder:
        junit = Path(folder) / "junit.xml"
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p",
                               "no:cacheprovider", "-rA", f"--junitxml={junit}",
                               str(HERE / argv[1])])
        if proc.returncode != 0:
            return proc.returncode
        text = junit.read_text()
    if 'tests="1"' not in text or "<skipped" in text:
        print(f"{argv[1]}: not run (skipped or not collected)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
