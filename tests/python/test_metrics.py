"""/metrics during a real run of Python ranks: the DDP tutorial's snippet under `hetrun run
--metrics-port`; each rank's hetrun.Tuner (the core's WindowLoop) writes its figures into the run
folder at each window boundary, and hetrun serves them while the ranks still run."""

import os
import re
import subprocess
import sys
import time
import urllib.request

from conftest import free_port
from test_examples import HETRUN, tutorial_snippet as snippet


def test_python_ranks_figures_are_scraped_while_the_run_goes_on(tmp_path):
    # 30 steps, windows of 10 after 2 warm-up steps: 2 windows close (the snippet's window=2).
    done = tmp_path / "done"
    # The snippet, then wait until the test has scraped (the workers stay up meanwhile).
    code = snippet() + (f"\nimport pathlib, time\nwhile not pathlib.Path({str(done)!r}).exists():"
                        "\n    time.sleep(0.05)\n")
    (tmp_path / "train.py").write_text(code)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETRUN_")}
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    err = open(tmp_path / "hetrun.err", "w+")
    proc = subprocess.Popen([HETRUN, "run", "--nproc-per-node", "2", "--master-port",
                             str(free_port()), "--metrics-port", "127.0.0.1:0", "--",
                             sys.executable, "train.py"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 300  # generous: a loaded machine; no speed is asserted
        port, text = None, ""
        while time.monotonic() < deadline and proc.poll() is None:
            if port is None:
                found = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics",
                                  (tmp_path / "hetrun.err").read_text())
                port = found and int(found.group(1))
            if port:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20) as r:
                    text = r.read().decode()
                if all(f'hetrun_tuner_windows_total{{rank="{r}"}} 2' in text for r in (0, 1)):
                    break
            time.sleep(0.2)
        assert 'hetrun_tuner_windows_total{rank="1"} 2' in text, text + err_text(tmp_path)
        shares = [int(float(v)) for v in
                  re.findall(r'hetrun_rank_share_samples\{rank="\d"\} (\S+)', text)]
        assert sum(shares) == 192, text
        assert 'hetrun_workers_running{node="0"} 2' in text, text
        assert re.search(r'hetrun_tuner_efficiency\{rank="0"\} [0-9.e+-]+', text), text
    finally:
        done.write_text("")
        code = proc.wait(timeout=300)
    assert code == 0, err_text(tmp_path)


def err_text(tmp_path) -> str:
    return (tmp_path / "hetrun.err").read_text()
