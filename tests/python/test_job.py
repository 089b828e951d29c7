"""hetrun.init() reads the worker environment with the C++ runtime's reader."""

import os
import subprocess
import sys

import pytest

import hetrun
from hetrun import _core

TORCHRUN = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29400"}


@pytest.fixture
def clean_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("HETRUN_", "OMPI_", "PMI_")) or name in TORCHRUN:
            monkeypatch.delenv(name)
    return monkeypatch


def test_torchrun_environment(clean_env):
    for k, v in TORCHRUN.items():
        clean_env.setenv(k, v)
    clean_env.setenv("HETRUN_GPU_FAMILY", "ampere")
    clean_env.setenv("HETRUN_MEMORY_CEILING_BYTES", "1073741824")
    clean_env.setenv("HETRUN_EMULATE_SLOWDOWN", "ampere=3.17,hopper=1")
    job = hetrun.init()
    assert (job.rank, job.world_size, job.local_rank, job.local_world_size) == (3, 4, 1, 2)
    assert (job.stage, job.stage_ranks) == (0, (0, 1, 2, 3))
    assert job.family == "ampere"
    assert job.memory_ceiling_bytes == 1 << 30
    assert job.emulated_slowdown == pytest.approx(3.17)
    assert job.source == "RANK/WORLD_SIZE"


def test_open_mpi_environment(clean_env):
    clean_env.setenv("OMPI_COMM_WORLD_RANK", "2")
    clean_env.setenv("OMPI_COMM_WORLD_SIZE", "3")
    clean_env.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0")
    clean_env.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1")
    job = hetrun.init()
    assert (job.rank, job.world_size, job.source) == (2, 3, "Open MPI")
    assert job.memory_ceiling_bytes is None and job.family is None


def test_nothing_set_is_one_process(clean_env):
    job = hetrun.init()
    assert (job.rank, job.world_size, job.source) == (0, 1, "single process")


@pytest.mark.parametrize("name, value", [("RANK", "7"), ("WORLD_SIZE", "four"),
                                         ("HETRUN_MEMORY_CEILING_BYTES", "lots"),
                                         ("HETRUN_EMULATE_SLOWDOWN", "0.5")])
def test_bad_variable_is_a_value_error_naming_it(clean_env, name, value):
    for k, v in TORCHRUN.items():
        clean_env.setenv(k, v)
    clean_env.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        hetrun.init()


def test_beat_touches_the_heartbeat_file(clean_env, tmp_path):
    path = tmp_path / "beat"
    path.write_text("")
    os.utime(path, (0, 0))
    clean_env.setenv("HETRUN_HEARTBEAT", str(path))
    _core.Heartbeat().beat()
    assert path.stat().st_mtime > 0
    clean_env.setenv("HETRUN_HEARTBEAT", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="missing"):
        _core.Heartbeat().beat()


def test_extension_does_not_link_libtorch():
    needed = subprocess.run(["readelf", "-d", _core.__file__], capture_output=True, text=True,
                            check=True).stdout
    libs = [line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line]
    assert libs, needed
    for lib in libs:
        assert not lib.startswith(("libtorch", "libc10", "libhetrun", "libspdlog", "libfmt",
                                   "libzstd", "liblz4", "libpython")), libs


def test_core_imports_without_torch():
    code = "import sys, hetrun; hetrun._core.read_job(); hetrun.beat(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
