"""`hetrun plan --emit torchtitan` checked with torchtitan 0.3.0 itself (installed --no-deps with
its config dependencies; its model code does not import beside torch 2.11, its config and split
code do): the emitted flags parse into its ParallelismConfig and TrainingConfig under its
ConfigManager's tyro rules, and its pipeline module split, run on a meta-device toy with
torchtitan's module names, gives every stage exactly the modules the plan put there."""

import dataclasses
import shlex
import subprocess

import torch
import torchtitan.config.configs as configs  # scripts/setup installs torchtitan (--no-deps)
import torchtitan.config.manager as manager
import torchtitan.distributed.pipeline_parallel as pipeline
import tyro

from launch import HETRUN, ROOT


@dataclasses.dataclass
class Overrides:
    """The two sections the emitted flags touch, as torchtitan's root config holds them."""

    parallelism: configs.ParallelismConfig = dataclasses.field(
        default_factory=configs.ParallelismConfig)
    training: configs.TrainingConfig = dataclasses.field(default_factory=configs.TrainingConfig)


def emitted(*extra):
    proc = subprocess.run([HETRUN, "plan", "--cluster", str(ROOT / "examples/plan/seed-cluster.json"),
                           "--model", str(ROOT / "examples/plan/seed-model.json"), "--emit",
                           "torchtitan", *extra], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(line.startswith("#") for line in lines[:-1]), proc.stdout
    assert "torchtitan 0.3.0" in lines[0]
    return shlex.split(lines[-1])


def parse(flags):
    registry = tyro.constructors.ConstructorRegistry()
    manager.ConfigManager.register_tyro_rules(registry)
    return tyro.cli(Overrides, args=flags, registry=registry)


class Toy(torch.nn.Module):
    """torchtitan's decoder layout: tok_embeddings, layers (a ModuleDict), norm, lm_head."""

    def __init__(self, layers):
        super().__init__()
        self.tok_embeddings = torch.nn.Embedding(8, 4)
        self.layers = torch.nn.ModuleDict({str(i): torch.nn.Linear(4, 4) for i in range(layers)})
        self.norm = torch.nn.LayerNorm(4)
        self.lm_head = torch.nn.Linear(4, 8)


def test_the_seed_plans_flags_parse_with_torchtitans_rules_and_split_its_model():
    config = parse(emitted())
    p = config.parallelism
    assert p.pipeline_parallel_degree == 6
    assert p.pipeline_parallel_schedule == "1F1B"
    assert config.training.local_batch_size % p.pipeline_parallel_microbatch_size == 0
    parts = p.module_fqns_per_model_part
    assert len(parts) == 6
    # The seed plan: 4,14,14,14,14,4 model layers; 62 transformer layers between the two ends.
    assert parts[0] == ["tok_embeddings", "layers.0", "layers.1", "layers.2"]
    assert parts[-1] == ["layers.59", "layers.60", "layers.61", "norm", "lm_head"]
    with torch.device("meta"):
        toy = Toy(62)
    kept = []
    for names in parts:
        stage = pipeline._split_module(toy, names)
        kept.append([f"layers.{k}" for k in stage.layers.keys()])
        assert (stage.tok_embeddings is not None) == ("tok_embeddings" in names)
        assert (stage.lm_head is not None) == ("lm_head" in names)
    assert [layer for stage in kept for layer in stage] == [f"layers.{i}" for i in range(62)]
    assert [len(stage) for stage in kept] == [3, 14, 14, 14, 14, 3]


def test_overridden_names_reach_torchtitans_config():
    config = parse(emitted("--torchtitan-names", "embed:blocks.{}:final_norm,output"))
    parts = config.parallelism.module_fqns_per_model_part
    assert parts[0][0] == "embed" and parts[-1][-2:] == ["final_norm", "output"]


def test_bad_names_exit_78_naming_the_flag():
    proc = subprocess.run([HETRUN, "plan", "--cluster", str(ROOT / "examples/plan/seed-cluster.json"),
                           "--model", str(ROOT / "examples/plan/seed-model.json"), "--emit",
                           "torchtitan", "--torchtitan-names", "a:b:c"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 78, proc.stderr
    assert "--torchtitan-names 'a:b:c'" in proc.stderr
