"""examples/launchers/hetrun-megatron.sh and hetrun-torchtitan.sh under the real `hetrun run
--replan-restart`: every attempt starts the engine with the pipeline arguments of the layout it
runs (HETRUN_MEGATRON_ARGS / HETRUN_TORCHTITAN_ARGS), so after a re-plan by restart the engine
starts on the recorded split. The stand-in engine (engine_stand_in.py) records its command
line; the arguments are then read the way the engines read them: torchtitan 0.3.0's own
ConfigManager tyro rules and pipeline module split (as test_torchtitan.py), and Megatron-Core
0.15.0's own PipelineParallelLayerLayout (megatron/core/transformer/
pipeline_parallel_layer_layout.py, installed --no-deps by scripts/setup). That module is loaded
without megatron/core/__init__.py, which imports the whole training stack (20 s here) and
nothing the layout parser uses; the parser's own imports (parallel_state, the LayerType enum)
are the real ones."""

import argparse
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import types

import pytest
import torch

from launch import HETRUN, ROOT, environment, free_port
from test_torchtitan import Toy, parse

HERE = pathlib.Path(__file__).resolve().parent
NAMES = ["embedding"] + [f"block.{i}" for i in range(6)] + ["head"]
# 8 named layers: 6 on the ampere stage, 2 on the hopper one (a bad hand split).
PLAN = {"layers": 8, "micro_batches": 2, "layer_names": NAMES,
        "stages": [{"stage": 0, "family": "ampere", "first_layer": 0, "layers": 6},
                   {"stage": 1, "family": "hopper", "first_layer": 6, "layers": 2}]}


def run_wrapped(tmp_path, wrapper, *engine_args):
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    cmd = [HETRUN, "run", "--nproc-per-node", "2", "--master-port", str(free_port()), "--plan",
           str(tmp_path / "plan.json"), "--replan-restart", "--checkpoint-dir", str(ckpt), "--",
           str(ROOT / "examples/launchers" / wrapper), sys.executable,
           str(HERE / "engine_stand_in.py"), "--out", str(tmp_path), "--move-to", "4,4",
           *engine_args]
    return subprocess.run(cmd, env=environment(), cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)


def recorded(tmp_path, attempt, rank):
    return json.loads((tmp_path / f"argv.{attempt}.{rank}.json").read_text())


def megatron_layout_class():
    """Megatron-Core's layout parser, from the installed megatron-core 0.15.0."""
    assert importlib.metadata.version("megatron-core") == "0.15.0"
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "8.0")  # its imports ask torch for an arch
    spec = importlib.util.find_spec("megatron")
    root = pathlib.Path(list(spec.submodule_search_locations)[0])
    for name, path in (("megatron", root), ("megatron.core", root / "core")):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(path)]
            sys.modules[name] = package
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.pipeline_parallel_layer_layout import (
        PipelineParallelLayerLayout)
    return PipelineParallelLayerLayout, LayerType


def megatron_flags(argv):
    parser = argparse.ArgumentParser()  # the three flags as Megatron-LM's arguments.py types them
    parser.add_argument("--pipeline-model-parallel-size", type=int, required=True)
    parser.add_argument("--num-layers", type=int, required=True)
    parser.add_argument("--pipeline-model-parallel-layout", type=str, required=True)
    parser.add_argument("--seq-length", type=int)
    return parser.parse_args(argv)


def test_megatron_starts_each_attempt_on_the_split_it_runs(tmp_path):
    proc = run_wrapped(tmp_path, "hetrun-megatron.sh", "--seq-length", "64")
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert "every worker succeeded after 1 re-plan(s)" in proc.stderr
    layout_class, layer_type = megatron_layout_class()
    for attempt, split in ((0, [6, 2]), (1, [4, 4])):
        for rank in (0, 1):
            seen = recorded(tmp_path, attempt, rank)
            flags = megatron_flags(seen["argv"])
            assert flags.seq_length == 64  # the user's own arguments come first, unchanged
            layout = layout_class(flags.pipeline_model_parallel_layout,
                                  flags.pipeline_model_parallel_size)
            layout.validate_layer_layout(flags.num_layers, 0)
            stages = [stage[0] for stage in layout.layout]  # one virtual stage each
            # Megatron's transformer layers per stage, its embedding on stage 0 and its output
            # layer on the last: exactly the model layers the layout gives each stage.
            decoders = [sum(t == layer_type.decoder for t in s) for s in stages]
            assert decoders == [split[0] - 1, split[1] - 1], (attempt, stages)
            assert stages[0][0] == layer_type.embedding
            assert stages[-1][-1] == layer_type.loss
            first = 0 if seen["stage"] == 0 else split[0]
            assert seen["stage_layers"] == f"{first}:{split[seen['stage']]}"


def test_torchtitan_starts_each_attempt_on_the_split_it_runs(tmp_path):
    proc = run_wrapped(tmp_path, "hetrun-torchtitan.sh",
                       "--parallelism.pipeline_parallel_microbatch_size", "1")
    assert proc.returncode == 0, proc.stderr[-6000:]
    with torch.device("meta"):
        toy = Toy(6)
    import torchtitan.distributed.pipeline_parallel as pipeline
    for attempt, split in ((0, [6, 2]), (1, [4, 4])):
        for rank in (0, 1):
            config = parse(recorded(tmp_path, attempt, rank)["argv"])
            p = config.parallelism
            assert p.pipeline_parallel_degree == 2
            assert p.pipeline_parallel_schedule == "1F1B"
            assert p.pipeline_parallel_microbatch_size == 1
            kept = [sorted(int(k) for k in pipeline._split_module(toy, names).layers.keys())
                    for names in p.module_fqns_per_model_part]
            assert [len(stage) for stage in kept] == [split[0] - 1, split[1] - 1], attempt
            assert sum(kept, []) == list(range(6))


@pytest.mark.parametrize("wrapper, flag", [
    ("hetrun-megatron.sh", "--num-layers=8"),
    ("hetrun-torchtitan.sh", "--parallelism.pipeline-parallel-degree"),
])
def test_a_command_that_sets_a_layout_flag_itself_is_refused_naming_it(tmp_path, wrapper, flag):
    proc = run_wrapped(tmp_path, wrapper, flag)
    assert proc.returncode == 2, proc.stderr[-4000:]
    assert f"the command sets {flag.split('=')[0]}, which HETRUN_" in proc.stderr
    assert not list(tmp_path.glob("argv.*"))


@pytest.mark.parametrize("wrapper", ["hetrun-megatron.sh", "hetrun-torchtitan.sh"])
def test_outside_a_pipeline_layout_the_wrapper_exits_1_saying_why(tmp_path, wrapper):
    proc = subprocess.run([str(ROOT / "examples/launchers" / wrapper), "true"],
                          env=environment(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "is not set: run this under hetrun run with a pipeline layout" in proc.stderr
