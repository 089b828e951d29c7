"""`hetrun plan --emit torchtitan` checked with torchtitan 0.3.0 itself (installed --no-deps with
its config dependencies; its model code does not import beside torch 2.11, its config and split
code do): the emitted flags parse into its ParallelismConfig and TrainingConfig under its
ConfigManager's tyro rules, and its pipeline module split, run on a meta-device toy with
torchtitan's module names, gives every stage exactly the modules the plan put there.
`--torchtitan-version main` (token counts, torchtitan's PR #4121) is read back with a reader of
main's configuration rules kept in tests/data/torchtitan/main-config-rules.json (main is not
installable beside torch 2.11)."""

import dataclasses
import json
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


def emitted(*extra, model=ROOT / "examples/plan/seed-model.json", version="0.3.0"):
    proc = subprocess.run([HETRUN, "plan", "--cluster", str(ROOT / "examples/plan/seed-cluster.json"),
                           "--model", str(model), "--emit", "torchtitan", *extra],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(line.startswith("#") for line in lines[:-1]), proc.stdout
    assert f"torchtitan {version} " in lines[0]
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


def test_the_default_is_the_installed_torchtitans_keys():
    # scripts/setup installs torchtitan 0.3.0 beside hetrun; without one hetrun writes 0.3.0's.
    flags = emitted()
    assert "--training.local_batch_size" in flags
    assert emitted("--torchtitan-version", "0.3.0") == flags


MAIN_RULES = json.loads((ROOT / "tests/data/torchtitan/main-config-rules.json").read_text())


def read_main(flags):
    """torchtitan main's overrides as its config would hold them: --SECTION.FIELD VALUE... for the
    fields main-config-rules.json lists, ints as ints, a list[list[str]] one comma list per
    argument, then main's __post_init__ constraints. Raises on an unknown key or a bad value."""
    values = {}
    i = 0
    while i < len(flags):
        section, _, name = flags[i].removeprefix("--").partition(".")
        field = MAIN_RULES["sections"].get(section, {}).get(name)
        if field is None:
            raise KeyError(f"torchtitan main has no {flags[i]}")
        i += 1
        args = []
        while i < len(flags) and not flags[i].startswith("--"):
            args.append(flags[i])
            i += 1
        if field["type"].startswith("list[list[str]]"):
            values[f"{section}.{name}"] = [arg.split(",") for arg in args]
        elif field["type"] == "int":
            (arg,) = args
            values[f"{section}.{name}"] = int(arg)
        else:
            (values[f"{section}.{name}"],) = args
    for key, rule in MAIN_RULES["constraints"].items():
        value = values.get(key, int(MAIN_RULES["sections"][key.split(".")[0]][
            key.split(".")[1]]["default"]))
        if value <= 0 and not (rule.startswith("-1") and value == -1):
            raise ValueError(f"{key} {value}: {rule}")
    return values


def test_main_keys_count_tokens_and_read_back_with_mains_rules(tmp_path):
    model = json.loads((ROOT / "examples/plan/seed-model.json").read_text())
    model["sequence_length"] = 4096
    model["micro_batch_size"] = 2
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    values = read_main(emitted("--torchtitan-version", "main", model=path, version="main"))
    assert values["training.num_tokens_per_microbatch_per_dp_rank"] == 2 * 4096
    assert values["training.max_context_length"] == 4096
    assert values["parallelism.num_pp_microbatches"] == model["micro_batches"]
    assert len(values["parallelism.module_fqns_per_model_part"]) == 6
    assert "training.local_batch_size" not in values
    # 0.3.0's keys are not main's: its reader refuses them.
    try:
        read_main(emitted())
    except KeyError as error:
        assert "local_batch_size" in str(error) or "microbatch_size" in str(error)
    else:
        raise AssertionError("main's rules accepted 0.3.0's keys")


def test_main_without_a_sequence_length_is_a_clear_error():
    proc = subprocess.run([HETRUN, "plan", "--cluster", str(ROOT / "examples/plan/seed-cluster.json"),
                           "--model", str(ROOT / "examples/plan/seed-model.json"), "--emit",
                           "torchtitan", "--torchtitan-version", "main"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 78, proc.stderr
    assert "sequence_length" in proc.stderr and "main" in proc.stderr


def test_an_unknown_torchtitan_version_is_a_usage_error():
    proc = subprocess.run([HETRUN, "plan", "--cluster", str(ROOT / "examples/plan/seed-cluster.json"),
                           "--model", str(ROOT / "examples/plan/seed-model.json"), "--emit",
                           "torchtitan", "--torchtitan-version", "0.2.0"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 64, proc.stderr
    assert "--torchtitan-version '0.2.0'" in proc.stderr
