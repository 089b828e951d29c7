"""hetrun.pipeline: the layout file, the Rebalancer and the MeasurementLog bound from the C++ core.
The Rebalancer cases feed the figures of tests/runtime/pipeline/rebalance_test.cc and expect the
same decisions; the MeasurementLog case writes rank files under the real `hetrun run` and reads
them back with `hetrun plan --measured` (HETRUN_BIN, set by ctest; else build/bin/hetrun)."""

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

import hetrun
import hetrun.pipeline as hp
from conftest import free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
HETRUN = str(pathlib.Path(os.environ.get("HETRUN_BIN", ROOT / "build" / "bin" / "hetrun")).resolve())

LAYOUT = {"version": 1, "num_layers": 6, "micro_batches": 4, "min_share": 1, "schedule": "1f1b",
          "revision": 0, "layer_names": ["embedding", "block.0", "block.1", "block.2", "block.3",
                                         "head"],
          "layer_costs": [0.1, 1.0, 1.0, 1.0, 1.0, 0.3],
          "stages": [{"first_layer": 0, "layers": 2, "ranks": [0, 1],
                      "families": ["ampere", "ampere"], "shares": [1.0, 1.0]},
                     {"first_layer": 2, "layers": 4, "ranks": [2], "families": ["hopper"],
                      "shares": [1.0]}]}


def two_stage_layout(counts, micro):
    stages, first = [], 0
    for rank, n in enumerate(counts):
        stages.append({"first_layer": first, "layers": n, "ranks": [rank]})
        first += n
    return hp.parse_job_layout(json.dumps({"num_layers": first, "micro_batches": micro,
                                           "stages": stages}))


def window(counts, speeds):
    """rebalance_test.cc's TrueJob::Window without noise: cost 1 per layer, t = cost / speed."""
    out, first = [], 0
    for n, speed in zip(counts, speeds):
        t = n / speed
        out.append(hp.StageMeasurement(first_layer=first, layers=n, forward_ms=t / 3,
                                       backward_ms=2 * t / 3))
        first += n
    return out


def test_a_layout_file_is_read_into_stages_and_written_back_atomically(tmp_path):
    path = tmp_path / "layout.json"
    path.write_text(json.dumps(LAYOUT))
    layout = hp.load_job_layout(str(path))
    assert layout.counts == [2, 4] and layout.world_size == 3
    assert layout.micro_batches == 4 and layout.schedule == "1f1b" and layout.revision == 0
    assert layout.layer_costs == [0.1, 1.0, 1.0, 1.0, 1.0, 0.3]
    assert layout.layer_names[5] == "head"
    assert layout.stages[0].ranks == [0, 1] and layout.stages[0].families == ["ampere", "ampere"]
    assert layout.stages[1].shares == [1.0] and layout.stages[0].replicas == 2
    assert (layout.stage_of(2), layout.replica_of(1), layout.stage_of(7)) == (1, 1, -1)

    moved = hp.with_split(layout, [3, 3])
    assert (moved.counts, moved.revision, layout.revision) == ([3, 3], 1, 0)
    assert moved.stages[1].first_layer == 3 and moved.stages[1].ranks == [2]
    hp.write_job_layout_file(moved, str(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["layout.json"]  # no temp file left
    again = hp.load_job_layout(str(path))
    assert (again.counts, again.revision, again.layer_costs) == ([3, 3], 1, layout.layer_costs)
    assert hp.parse_job_layout(again.to_json()).to_json() == again.to_json()


def test_layout_integers_out_of_range_are_named_not_wrapped():
    # Issue 28 item 16: ranks [4294967296] read as rank 0; revision 2^63-1 was taken, and then
    # with_split raised TypeError on revision + 1.
    layout = dict(LAYOUT, stages=[dict(LAYOUT["stages"][0], ranks=[4294967296, 1]),
                                  LAYOUT["stages"][1]])
    with pytest.raises(ValueError, match=r"\$\.stages\[0\]\.ranks: 4294967296 is no rank"):
        hp.parse_job_layout(json.dumps(layout))
    with pytest.raises(ValueError, match=r"\$\.revision: must be an integer in \[0, "):
        hp.parse_job_layout(json.dumps(dict(LAYOUT, revision=2**63 - 1)))


def test_layout_errors_name_the_file_the_field_and_the_bad_value(tmp_path):
    with pytest.raises(ValueError, match="no_such.json"):
        hp.load_job_layout(str(tmp_path / "no_such.json"))
    bad = dict(LAYOUT, stages=[dict(LAYOUT["stages"][0], layers=3), LAYOUT["stages"][1]])
    with pytest.raises(ValueError, match=r"plan\.json: .*stage"):
        hp.parse_job_layout(json.dumps(bad), "plan.json")
    with pytest.raises(ValueError,
                       match=r"plan\.json: \$\.revision: must be an integer in \[0, \d+\], got -1"):
        hp.parse_job_layout(json.dumps(dict(LAYOUT, revision=-1)), "plan.json")
    layout = hp.parse_job_layout(json.dumps(LAYOUT))
    with pytest.raises(ValueError, match="schedule"):
        layout.schedule = "zigzag"
    with pytest.raises(ValueError, match="2 counts for 3 stages|3 counts for 2 stages"):
        hp.with_split(layout, [2, 2, 2])
    with pytest.raises(ValueError, match="stage"):
        hp.with_split(layout, [0, 6])
    with pytest.raises(ValueError, match="stage"):
        hp.write_job_layout_file(hp.JobLayout(), str(tmp_path / "empty.json"))
    assert not (tmp_path / "empty.json").exists()
    with pytest.raises(ValueError, match=r"open\(.*no_dir/layout.json.tmp\.\d+\.[0-9a-f]+\)"):
        hp.write_job_layout_file(layout, str(tmp_path / "no_dir" / "layout.json"))


def test_record_move_writes_the_layout_per_node_and_the_state_once(tmp_path, monkeypatch):
    moved = hp.with_split(hp.parse_job_layout(json.dumps(LAYOUT)), [3, 3])
    plan, state = tmp_path / "plan.json", tmp_path / "state.json"
    monkeypatch.setenv("HETRUN_PLAN", str(plan))
    monkeypatch.setenv("HETRUN_LAYOUT_STATE", str(state))
    for rank, local_rank in ((2, 1), (1, 1)):  # neither writes anything
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("LOCAL_RANK", str(local_rank))
        assert hp.record_move(moved) == []
    assert not plan.exists() and not state.exists()
    monkeypatch.setenv("RANK", "3")  # local rank 0 of another node: its own layout file
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert hp.record_move(moved) == [str(plan)]
    assert not state.exists()
    assert hp.load_job_layout(str(plan)).counts == [3, 3]
    assert hp.record_move(moved, rank=0) == [str(plan), str(state)]
    assert (hp.load_job_layout(str(state)).counts, hp.load_job_layout(str(state)).revision) == \
        ([3, 3], 1)
    monkeypatch.delenv("RANK")
    with pytest.raises(ValueError, match="RANK is not set"):
        hp.record_move(moved)
    monkeypatch.setenv("RANK", "zero")
    with pytest.raises(ValueError, match="RANK='zero' is not an integer"):
        hp.record_move(moved)
    monkeypatch.delenv("HETRUN_PLAN")
    with pytest.raises(ValueError, match="HETRUN_PLAN is not set"):
        hp.record_move(moved, rank=0, local_rank=0)
    with pytest.raises(ValueError, match=r"HETRUN_LAYOUT_STATE.*no_dir/state\.json"):
        hp.record_move(moved, rank=0, local_rank=1,
                       state_path=str(tmp_path / "no_dir" / "state.json"))


def test_the_rebalancer_confirms_a_move_then_settles_as_in_the_cpp_unit_test():
    # RebalancerTest.AMoveIsConfirmedFirstAndTheNextWindowOnlySettles: speeds 1:3, 8,8, M = 4.
    rebalancer = hp.Rebalancer(two_stage_layout([8, 8], 4))
    for w in (1, 2):
        d = rebalancer.decide(window([8, 8], [1.0, 3.0]))
        assert not d.move and f"measuring: window {w} of the 3" in d.reason
    first = rebalancer.decide(window([8, 8], [1.0, 3.0]))
    assert not first.move and "confirming: 1 of 2" in first.reason
    assert first.new_counts == [4, 12]
    second = rebalancer.decide(window([8, 8], [1.0, 3.0]))
    assert second.move and second.reason.startswith("move: 8,8 -> split 4,12"), second.reason
    assert second.current_counts == [8, 8]
    assert second.predicted_current_ms[0] == 8.0
    assert second.predicted_new_ms == [4.0, 4.0]
    assert second.predicted_current_iteration_ms == 8.0 + 8.0 / 3 + 3 * 8.0
    assert second.measured_current_iteration_ms == second.predicted_current_iteration_ms
    assert second.predicted_new_iteration_ms < second.predicted_current_iteration_ms
    rebalancer.applied(second)
    assert rebalancer.current_counts == [4, 12] and rebalancer.moves == 1
    settling = rebalancer.decide(window([4, 12], [1.0, 3.0]))
    assert not settling.move and "settling" in settling.reason


def test_the_rebalancer_holds_on_figures_of_another_split_or_bad_numbers():
    # RebalancerTest.MeasurementsOfAnotherSplitOrWithBadNumbersAreNotUsed.
    rebalancer = hp.Rebalancer(two_stage_layout([8, 8], 4), confirm_windows=1, min_windows=1)
    other = rebalancer.decide(window([7, 9], [1.0, 3.0]))
    assert not other.move
    assert "stage 0 measured layers [0, 7) but the split gives it [0, 8)" in other.reason
    nan = window([8, 8], [1.0, 3.0])
    nan[1].backward_ms = math.nan
    assert "stage 1: forward_ms and backward_ms" in rebalancer.decide(nan).reason
    assert "measures 1 stages, the split has 2" in rebalancer.decide(
        window([8, 8], [1.0, 3.0])[:1]).reason
    assert rebalancer.decide(window([8, 8], [1.0, 3.0])).move  # none of them was kept


def test_a_gain_below_the_threshold_holds_and_a_lower_threshold_takes_it():
    # RebalancerTest.AGainBelowTheThresholdHolds: 32/32 on speeds 1.0 and 1.1 gains 2.5%.
    rebalancer = hp.Rebalancer(two_stage_layout([32, 32], 8))
    for _ in range(5):
        d = rebalancer.decide(window([32, 32], [1.0, 1.1]))
        assert not d.move and d.reason.startswith("hold: "), d.reason
    eager = hp.Rebalancer(two_stage_layout([32, 32], 8), threshold=0.01, confirm_windows=1,
                          min_windows=1)
    d = eager.decide(window([32, 32], [1.0, 1.1]))
    assert d.move, d.reason
    assert d.predicted_new_iteration_ms < 0.99 * d.predicted_current_iteration_ms


def test_a_forced_move_is_applied_and_a_bad_option_is_named():
    rebalancer = hp.Rebalancer(two_stage_layout([8, 8], 4))
    forced = hp.RebalanceDecision(current_counts=[8, 8], new_counts=[6, 10])
    assert forced.move and forced.reason == "forced: 8,8 -> 6,10"
    rebalancer.applied(forced)
    assert rebalancer.current_counts == [6, 10]
    with pytest.raises(ValueError, match="unknown option 'treshold'"):
        hp.Rebalancer(two_stage_layout([8, 8], 4), treshold=0.1)
    with pytest.raises(ValueError, match="threshold must be in \\(0, 1\\), got 1.5"):
        hp.Rebalancer(two_stage_layout([8, 8], 4), threshold=1.5)


def test_helpers_take_the_slowest_replica_and_list_the_moving_layers():
    figures = [{"stage": 0, "first_layer": 0, "layers": 2, "forward_ms": 1.0, "backward_ms": 2.0},
               {"stage": 0, "first_layer": 0, "layers": 2, "forward_ms": 2.0, "backward_ms": 3.0},
               {"stage": 1, "first_layer": 2, "layers": 4, "forward_ms": 4.0, "backward_ms": 8.0,
                "layer_ms": [3, 3, 3, 3]}]
    stages = hp.stage_window(figures, 2)
    assert [(s.first_layer, s.layers, s.forward_ms, s.backward_ms) for s in stages] == [
        (0, 2, 2.0, 3.0), (2, 4, 4.0, 8.0)]
    assert stages[1].layer_ms == [3.0, 3.0, 3.0, 3.0]
    with pytest.raises(ValueError, match="no figure for stage 1"):
        hp.stage_window(figures[:2], 2)
    with pytest.raises(ValueError, match="figure 0 has no backward_ms"):
        hp.stage_window([{"stage": 0, "first_layer": 0, "layers": 2, "forward_ms": 1}], 1)
    # Whole numbers only: stage=1.9 was truncated to stage 1 (issue 28 item 16); 1.0 is fine.
    with pytest.raises(ValueError, match=r"figure 2: stage=1\.9 is not a whole number"):
        hp.stage_window(figures[:2] + [dict(figures[2], stage=1.9)], 2)
    with pytest.raises(ValueError, match=r"figure 2: layers=True is not a whole number"):
        hp.stage_window(figures[:2] + [dict(figures[2], layers=True)], 2)
    whole = hp.stage_window(figures[:2] + [dict(figures[2], stage=1.0, layers=4.0)], 2)
    assert whole[1].layers == 4
    assert hp.layer_moves([4, 4, 4], [5, 5, 2]) == [(4, 1, 0), (8, 2, 1), (9, 2, 1)]
    assert hp.layer_moves([2, 2], [2, 2]) == []
    with pytest.raises(ValueError, match="has 4 layers"):
        hp.layer_moves([2, 2], [2, 3])


def test_a_measurement_log_names_bad_input_and_keeps_windows_in_memory(tmp_path):
    layout = hp.parse_job_layout(json.dumps(LAYOUT))
    with pytest.raises(ValueError, match="rank 5"):
        hp.MeasurementLog(layout, 5)
    log = hp.MeasurementLog(layout, 2, str(tmp_path / "measurements" / "rank_2.json"))
    good = hp.WindowMeasurement(window=0, first_layer=2, layers=4, samples=8, micro_batches=4,
                                forward_ms=1.5, backward_ms=3.0)
    assert log.append(good)
    with pytest.raises(ValueError, match="window 1: times must be finite"):
        log.append(hp.WindowMeasurement(window=1, first_layer=2, layers=4, forward_ms=math.inf,
                                        backward_ms=1.0))
    # Windows the reader would refuse are refused at append (issue 28 item 12).
    with pytest.raises(ValueError, match="window -1"):
        log.append(hp.WindowMeasurement(window=-1, first_layer=2, layers=4, forward_ms=1.0,
                                        backward_ms=1.0))
    with pytest.raises(ValueError, match="lie outside the model"):
        log.append(hp.WindowMeasurement(window=1, first_layer=4, layers=4, forward_ms=1.0,
                                        backward_ms=1.0))
    back = hp.load_measurements(log.path)
    assert [(r.rank, r.stage, r.replica, r.family) for r in back.ranks] == [(2, 1, 0, "hopper")]
    assert [(w.window, w.forward_ms, w.samples) for w in back.ranks[0].windows] == [(0, 1.5, 8)]
    assert hp.parse_measurements(log.measurements.to_json()).to_json() == back.to_json()
    # A restarted worker (attempt 1) continues the file: attempt 0's window stays.
    again = hp.MeasurementLog(layout, 2, log.path, attempt=1)
    assert again.append(hp.WindowMeasurement(window=0, first_layer=2, layers=4, forward_ms=2.0,
                                             backward_ms=4.0))
    assert [(w.attempt, w.window, w.forward_ms)
            for w in hp.load_measurements(log.path).ranks[0].windows] == [(0, 0, 1.5), (1, 0, 2.0)]
    with pytest.raises(ValueError, match=r"m\.json: \$\.ranks\[0\]\.windows\[0\]\.forward_ms"):
        negative = json.loads(back.to_json())
        negative["ranks"][0]["windows"][0]["forward_ms"] = -1
        hp.parse_measurements(json.dumps(negative), "m.json")
    # A file that cannot be written warns once and the log goes on in memory.
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder should be")
    stuck = hp.MeasurementLog(layout, 0, str(blocked / "rank_0.json"))
    with pytest.warns(RuntimeWarning, match=r"measurements: open\(.*rank_0.json.tmp\.\d+\.[0-9a-f]+\)"):
        assert not stuck.append(hp.WindowMeasurement(window=0, first_layer=0, layers=2,
                                                     forward_ms=1, backward_ms=1))
    assert stuck.append(hp.WindowMeasurement(window=1, first_layer=0, layers=2, forward_ms=1,
                                             backward_ms=1))
    assert len(stuck.measurements.ranks[0].windows) == 2


WORKER = """
import os, hetrun.pipeline as hp
rank = int(os.environ["RANK"])
layout = hp.load_job_layout(os.environ["HETRUN_PLAN"])
log = hp.MeasurementLog.from_environment(layout, rank)
assert log.path.endswith(f"measurements/rank_{rank}.json"), log.path
stage = layout.stages[layout.stage_of(rank)]
for w in range(3):
    log.append(hp.WindowMeasurement(window=w, first_layer=stage.first_layer, layers=stage.layers,
                                    samples=4, micro_batches=2, forward_ms=1.0 * (rank + 1),
                                    backward_ms=2.0 * (rank + 1)))
"""


def test_measurement_logs_are_gathered_by_hetrun_run_and_replanned(tmp_path):
    # The plan of tests/integration/run/run_measurements_test.cc, the same figures: rank 0 (stage 0,
    # 2 layers) 3 ms, rank 1 (stage 1, 1 layer) 6 ms per micro-batch.
    assert os.access(HETRUN, os.X_OK), f"no hetrun binary at {HETRUN} (set HETRUN_BIN)"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({
        "layers": 3, "micro_batches": 2, "layer_names": ["embedding", "block.0", "head"],
        "layer_costs": [1, 2, 1],
        "stages": [{"family": "ampere", "first_layer": 0, "layers": 2},
                   {"family": "hopper", "first_layer": 2, "layers": 1}]}))
    (tmp_path / "worker.py").write_text(WORKER)
    out = tmp_path / "measurements.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETRUN_")}
    run = subprocess.run([HETRUN, "run", "--nproc-per-node", "2", "--master-port",
                          str(free_port()), "--plan", str(plan), "--measurements-out", str(out),
                          "--", sys.executable, "worker.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert f"measurements of 2 ranks (6 windows) written to {out}" in run.stderr
    merged = hp.load_measurements(str(out))
    assert [(r.rank, r.family, len(r.windows)) for r in merged.ranks] == [
        (0, "ampere", 3), (1, "hopper", 3)]
    assert len(merged.stage_windows()) == 3
    replan = subprocess.run([HETRUN, "plan", "--measured", str(out), "--plan", str(plan)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert replan.returncode == 0, replan.stderr
    assert "measured split 2,1: predicted iteration 15.000 ms (measured 15.000 ms)" in replan.stdout


def test_the_package_exposes_pipeline_without_importing_torch():
    code = ("import sys, hetrun; hetrun.pipeline.Rebalancer; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert hetrun.pipeline is hp
