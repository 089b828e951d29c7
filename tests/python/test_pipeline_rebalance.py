"""Live re-balancing from Python, end to end: pipeline_trainer.py under the real `hetrun run
--plan` (HETRUN_BIN, set by ctest; else build/bin/hetrun) on three Gloo processes starts from an
even split with one stage emulated twice as slow; the Rebalancer moves layers, parameters
and AdamW state travel over send/recv, and the loss sequence and final parameters equal a
one-process reference. The run's measurements.json is then re-planned by `hetrun plan
--measured`. Behaviour only: never a speed."""

import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch

from conftest import free_port
from pipeline_trainer import batch, full_model, new_optimizer

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HETRUN = str(pathlib.Path(os.environ.get("HETRUN_BIN", ROOT / "build" / "bin" / "hetrun")).resolve())

LAYERS, MICRO, STEPS = 12, 4, 14
PLAN = {"layers": LAYERS, "micro_batches": MICRO,
        "layer_names": [f"block.{i}" for i in range(LAYERS)],
        "stages": [{"family": "ampere", "first_layer": 0, "layers": 4},
                   {"family": "ampere", "first_layer": 4, "layers": 4},
                   {"family": "ampere", "first_layer": 8, "layers": 4}]}


def hetrun_cmd(args, cwd, timeout=600):
    assert os.access(HETRUN, os.X_OK), f"no hetrun binary at {HETRUN} (set HETRUN_BIN)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETRUN_")}
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    return subprocess.run([HETRUN, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def reference_losses():
    model = full_model(LAYERS)
    opt = new_optimizer(model.parameters())
    losses = []
    for step in range(STEPS):
        x, y = batch(step)
        total = 0.0
        for xm, ym in zip(x.chunk(MICRO), y.chunk(MICRO)):
            loss = torch.nn.functional.mse_loss(model(xm), ym) / MICRO
            loss.backward()
            total += loss.item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(total)
    return losses, [p.detach() for p in model.parameters()]


@pytest.fixture(scope="module")
def rebalanced_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipeline")
    plan = tmp / "plan.json"
    plan.write_text(json.dumps(PLAN))
    measurements = tmp / "measurements.json"
    proc = hetrun_cmd(["run", "--nproc-per-node", "3", "--master-port", str(free_port()),
                       "--plan", str(plan), "--measurements-out", str(measurements), "--",
                       sys.executable, str(HERE / "pipeline_trainer.py"), "--steps", str(STEPS),
                       "--window", "1", "--slow", "2:2", "--out", str(tmp / "result")], tmp)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    results = [json.loads((tmp / f"result.rank{r}").read_text()) for r in range(3)]
    return tmp, plan, measurements, results, proc.stdout + proc.stderr


def test_a_slow_stage_gives_layers_away_and_every_rank_agrees(rebalanced_run):
    _, _, _, results, log = rebalanced_run
    first = results[0]
    assert first["split_first"] == [4, 4, 4]
    assert len(first["moves"]) >= 1, first["reasons"]
    for r in results[1:]:  # the same decisions on every rank, from the same all-gathered figures
        assert r["reasons"] == first["reasons"]
        assert [(m["step"], m["split"]) for m in r["moves"]] == [
            (m["step"], m["split"]) for m in first["moves"]]
    # The stage twice as slow ends with fewer layers, the others took them.
    final = first["split_final"]
    assert sum(final) == LAYERS and final[2] < 4, first["reasons"]
    assert [r["layers"] for r in results] == [
        list(range(sum(final[:s]), sum(final[:s + 1]))) for s in range(3)]
    # Each move sends something: 5 layers of a 6x6 Linear in float64 with two AdamW moments.
    for i in range(len(first["moves"])):
        assert sum(r["moves"][i]["bytes_sent"] for r in results) > 0
    assert "move: 4,4,4 -> split" in log, log


def test_the_layout_file_is_rewritten_with_its_revision(rebalanced_run):
    _, _, _, results, _ = rebalanced_run
    for r in results:
        assert r["file_split"] == r["split_final"]
        assert r["file_revision"] == r["revision"] == len(r["moves"])


def test_moving_layers_keeps_the_loss_of_one_process(rebalanced_run):
    _, _, _, results, _ = rebalanced_run
    losses, params = reference_losses()
    pipeline_losses = results[2]["losses"]  # the last stage computes the loss
    assert len(pipeline_losses) == STEPS
    for step, (got, want) in enumerate(zip(pipeline_losses, losses)):
        assert abs(got - want) <= 1e-5 * max(1.0, abs(want)), (step, got, want)
    assert losses[-1] < losses[0]  # it trains
    got_params = [torch.tensor(p, dtype=torch.float64) for r in results for p in r["params"]]
    assert len(got_params) == len(params)
    for got, want in zip(got_params, params):
        assert torch.allclose(got, want, rtol=0, atol=1e-5)


def test_the_runs_measurements_are_replanned_by_hetrun_plan_measured(rebalanced_run):
    tmp, plan, measurements, results, _ = rebalanced_run
    import hetrun.pipeline as hp

    merged = hp.load_measurements(str(measurements))
    assert [r.rank for r in merged.ranks] == [0, 1, 2]
    assert len(merged.ranks[2].windows) == STEPS
    assert merged.ranks[2].windows[-1].revision == results[0]["revision"]
    proc = hetrun_cmd(["plan", "--measured", str(measurements), "--plan", str(plan), "--json"],
                      tmp)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["measured"]
    assert report["current_split"] == ",".join(map(str, results[0]["split_final"]))
    assert int(report["new_split"].split(",")[2]) < 4  # the slow stage keeps fewer layers
