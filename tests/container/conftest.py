"""Fixtures of the container tests: `containers` (named, removed after the test) and `out` (a
host folder every container may write, for the workers' markers and the termination log)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtime import Containers, profile_from_env  # noqa: E402


@pytest.fixture
def containers():
    group = Containers(profile_from_env())
    try:
        yield group
    finally:
        group.cleanup()


@pytest.fixture
def out(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    folder.chmod(0o777)  # the non-root image's user writes here too
    log = folder / "termination-log"
    log.touch()
    log.chmod(0o666)
    return folder
