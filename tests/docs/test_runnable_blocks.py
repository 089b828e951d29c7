"""Every code block the documentation marks as runnable, run as a reader would run it.

A page marks a block with an HTML comment on the line before its opening fence (invisible on the
site and on the code host; docs/development.md "Runnable blocks"):

    <!-- runnable -->                          run this sh block; it must exit 0
    <!-- runnable: file=train.py -->           write this block to train.py (run nothing)
    <!-- runnable: exit=80 -->                 it must exit 80
    <!-- runnable: expect="shares" -->         its output must contain the text
    <!-- runnable: needs=nvcc -->              skip the rest of the page without nvcc (says so)
    <!-- runnable: check-volcano-job=job.yaml --> then validate job.yaml as the tests validate
                                               emitted Volcano Jobs (CRD schema, admission rules)
    <!-- runnable: timeout=600 -->             seconds (default 300)

A page's blocks run in order in one fresh folder that holds a link to the repository's
examples/ (so paths read as they do from a clone), under `bash -euo pipefail`, with the
PATH the pages state: the built `hetrun`'s folder first (`export PATH=$PWD/build/bin:$PATH` in the
clone), then the system's, with no virtualenv on it (a `.py` worker of the build-tree hetrun runs
under the Python the build was configured with, the clone's .venv/bin/python:
docs/how-to/install.md); the CUDA toolkit's bin/ for the pages that need nvcc; and a free port in
HETRUN_MASTER_PORT, a fresh one per block (the default 29500 may be taken on a shared machine).
HETRUN_BIN, set by ctest, names the binary.
"""

import os
import pathlib
import random
import re
import shlex
import shutil
import socket
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARK = re.compile(r"^<!-- runnable(?::\s*(?P<opts>.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+)\s*(?P<lang>[\w+-]*)")
KEYS = {"file", "exit", "expect", "needs", "check-volcano-job", "timeout"}


def blocks(page):
    """[(line number, options, language, code)] of the page's runnable blocks."""
    lines = page.read_text().split("\n")
    found = []
    for i, line in enumerate(lines):
        mark = MARK.match(line)
        if not mark:
            continue
        opts = {}
        for word in shlex.split(mark.group("opts") or ""):
            key, _, value = word.partition("=")
            assert key in KEYS, f"{page}:{i + 1}: unknown runnable option '{key}'"
            opts[key] = value
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        fence = FENCE.match(lines[j]) if j < len(lines) else None
        assert fence, f"{page}:{i + 1}: a runnable mark must stand right before a code fence"
        indent, end = fence.group("indent"), fence.group("fence")
        code = []
        for k in range(j + 1, len(lines)):
            if lines[k].strip() == end:
                break
            code.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k])
        else:
            raise AssertionError(f"{page}:{j + 1}: code fence never closed")
        found.append((i + 1, opts, fence.group("lang"), "\n".join(code) + "\n"))
    return found


PAGES = sorted(p for p in DOCS.rglob("*.md") if blocks(p))


def free_port():
    # Below Linux's ephemeral range (32768-60999), as tests/python/conftest.py picks: no outgoing
    # connection of a parallel test takes the port before the job's rank 0 binds it.
    for _ in range(64):
        port = random.randint(20000, 32767)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_a_virtualenv(folder):
    """Whether a PATH entry is a virtualenv's bin/ (its parent holds pyvenv.cfg)."""
    return (pathlib.Path(folder).parent / "pyvenv.cfg").is_file()


def hetrun_binary():
    return pathlib.Path(os.environ.get("HETRUN_BIN", ROOT / "build" / "bin" / "hetrun"))


def environment():
    hetrun = hetrun_binary()
    assert os.access(hetrun, os.X_OK), f"no hetrun binary at {hetrun} (set HETRUN_BIN)"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HETRUN_", "VIRTUAL_ENV"))}
    system = [p for p in env.get("PATH", "/usr/bin:/bin").split(":") if p and not in_a_virtualenv(p)]
    path = [str(hetrun.resolve().parent)] + system
    cuda = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin"
    if cuda.is_dir():
        path.insert(1, str(cuda))
    env.update(PATH=":".join(path), PYTHONWARNINGS="ignore")
    return env


def test_the_site_has_runnable_blocks():
    assert len(PAGES) >= 4, [str(p) for p in PAGES]  # the tutorials at least


def test_the_pages_path_has_the_built_hetrun_first_and_no_virtualenv():
    path = environment()["PATH"].split(":")
    assert path[0] == str(hetrun_binary().resolve().parent), path
    assert str(ROOT / ".venv" / "bin") not in path and not any(map(in_a_virtualenv, path)), path


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_runnable_blocks_of(page, tmp_path):
    env = environment()
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for line, opts, lang, code in blocks(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        for tool in filter(None, opts.get("needs", "").split(",")):
            if not shutil.which(tool, path=env["PATH"]):
                pytest.skip(f"{where}: needs {tool}, which is not on PATH here")
        if "file" in opts:
            (tmp_path / opts["file"]).write_text(code)
            continue
        assert lang in ("sh", "bash", "console-sh"), f"{where}: runnable {lang!r} block needs file="
        env["HETRUN_MASTER_PORT"] = str(free_port())  # a fresh one per block
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=tmp_path, env=env,
                              capture_output=True, text=True,
                              timeout=int(opts.get("timeout", 300)))
        out = proc.stdout + proc.stderr
        want = int(opts.get("exit", 0))
        assert proc.returncode == want, f"{where}: exit {proc.returncode}, wanted {want}\n{out}"
        if "expect" in opts:
            assert opts["expect"] in out, f"{where}: output lacks {opts['expect']!r}\n{out}"
        if "check-volcano-job" in opts:
            validator = os.environ.get("HETRUN_VALIDATE_VOLCANO_JOB",
                                       ROOT / "build" / "tests" / "helpers" / "validate_volcano_job")
            check = subprocess.run([str(validator), opts["check-volcano-job"]], cwd=tmp_path,
                                   capture_output=True, text=True, timeout=60)
            assert check.returncode == 0, f"{where}: {check.stdout}{check.stderr}"
