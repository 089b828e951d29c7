"""hetrun.pipelining refuses what it cannot run with a ValueError naming the value, before any
stage is built: a layout whose stages have different replica counts (the per-stage-slice meshes
only the C++ executor runs), a layout of another layer count than the model's, an interleaved
schedule, a batch that does not split into replicas x micro-batches, a bad replan mode. One
process (Gloo, world size 1)."""

import json
import os

import pytest
import torch
import torch.distributed as dist

import hetrun.pipeline as hp
import hetrun.pipelining as hpp
from conftest import free_port


def layout(counts, ranks, micro=2):
    stages, first = [], 0
    for count, r in zip(counts, ranks):
        stages.append({"first_layer": first, "layers": count, "ranks": r})
        first += count
    return hp.parse_job_layout(json.dumps({"num_layers": sum(counts), "micro_batches": micro,
                                           "stages": stages}), "layout")


@pytest.fixture(scope="module")
def world_of_one():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def linear_layers(n):
    torch.manual_seed(0)
    return [torch.nn.Linear(4, 4).double() for _ in range(n)]


def new_pipeline(plan, layers=None, **kwargs):
    return hpp.Pipeline(layers if layers is not None else linear_layers(plan.num_layers),
                        torch.nn.functional.mse_loss,
                        lambda params: torch.optim.AdamW(params, lr=0.01), layout=plan, **kwargs)


def test_stages_with_different_replica_counts_are_refused(world_of_one):
    with pytest.raises(ValueError, match=r"different replica counts \(2,1 ranks per stage\).*"
                                         r"C\+\+ executor"):
        new_pipeline(layout([2, 2], [[0, 1], [2]]))


def test_a_layout_of_another_layer_count_than_the_model_is_refused(world_of_one):
    with pytest.raises(ValueError, match="num_layers=4, the model 3 layers"):
        new_pipeline(layout([2, 2], [[0], [1]]), layers=linear_layers(3))


def test_an_interleaved_schedule_is_refused(world_of_one):
    with pytest.raises(ValueError, match="schedule='interleaved1f1b'"):
        new_pipeline(layout([4], [[0]]), schedule="interleaved1f1b")


def test_a_bad_replan_mode_is_refused(world_of_one):
    with pytest.raises(ValueError, match="replan='sometimes'"):
        new_pipeline(layout([4], [[0]]), replan="sometimes")


def test_a_batch_that_does_not_split_into_micro_batches_is_refused(world_of_one):
    pipe = new_pipeline(layout([4], [[0]], micro=4), window=0)
    x = torch.randn(6, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="inputs has batch size 6, which does not split into "
                                         "1 replicas x 4 micro-batches"):
        pipe.step(x, x)


def test_one_stage_trains_with_the_full_models_names(world_of_one):
    pipe = new_pipeline(layout([3], [[0]], micro=2), window=0)
    names = [name for name, _ in pipe.named_parameters()]
    assert names[0] == "layers.0.weight" and names[-1] == "layers.2.bias"
    x = torch.randn(4, 4, dtype=torch.float64)
    first = pipe.step(x, 0.5 * x)
    for _ in range(5):
        last = pipe.step(x, 0.5 * x)
    assert last < first


def test_a_module_list_is_the_model_and_a_function_builds_layer_i(world_of_one):
    plan = layout([3], [[0]], micro=2)
    with pytest.raises(ValueError, match="num_layers=3, the model 2 layers"):
        new_pipeline(plan, layers=torch.nn.ModuleList(linear_layers(2)))
    built = []
    pipe = new_pipeline(plan, layers=lambda i: built.append(i) or torch.nn.Linear(4, 4).double(),
                        window=0)
    assert built == [0, 1, 2]
    assert sorted(pipe.module.layers.keys()) == ["0", "1", "2"]


def test_restart_mode_needs_a_checkpoint_folder(world_of_one):
    with pytest.raises(ValueError, match='replan="restart" needs checkpoint_dir='):
        new_pipeline(layout([2], [[0]]), replan="restart")


def test_a_moved_layout_without_a_checkpoint_is_not_trained_from_scratch(world_of_one,
                                                                         tmp_path):
    plan = layout([2], [[0]])
    plan.revision = 1
    with pytest.raises(ValueError, match=r"revision 1 \(moved\), but .*empty holds no complete "
                                         r"checkpoint"):
        new_pipeline(plan, replan="restart", checkpoint_dir=str(tmp_path / "empty"))


def test_a_checkpoint_of_another_model_is_refused_naming_the_entry(world_of_one, tmp_path):
    from hetrun import _restart

    other = hpp.StageModule({0: torch.nn.Linear(4, 4).double()})
    opt = torch.optim.AdamW(other.parameters(), lr=0.01)
    _restart.save(str(tmp_path / "ckpt"), other, opt, 3)
    with pytest.raises(ValueError, match=r"checkpoint .*ckpt/step-3-[0-9a-f]{8} has no model "
                                         r"entry 'layers.1.weight': it is not a checkpoint of "
                                         r"this model"):
        new_pipeline(layout([2], [[0]]), replan="restart", checkpoint_dir=str(tmp_path / "ckpt"))


def test_a_checkpoint_resumes_the_step_and_the_parameters(world_of_one, tmp_path):
    plan = layout([2], [[0]])
    pipe = new_pipeline(plan, window=0)
    x = torch.randn(4, 4, dtype=torch.float64)
    for _ in range(3):
        pipe.step(x, 0.5 * x)
    from hetrun import _restart

    _restart.save(str(tmp_path / "ckpt"), pipe.module, pipe.optimizer, pipe.steps)
    resumed = new_pipeline(plan, replan="restart", checkpoint_dir=str(tmp_path / "ckpt"))
    assert resumed.steps == resumed.resumed_at == 3
    for (name, got), (_, want) in zip(resumed.named_parameters(), pipe.named_parameters()):
        assert torch.equal(got, want), name
    assert resumed.step(x, 0.5 * x) == pipe.step(x, 0.5 * x)  # the AdamW state came back too


def test_a_save_cut_short_leaves_the_last_complete_checkpoint_to_resume_from(world_of_one, tmp_path,
                                                                             monkeypatch):
    """A preemption during the second re-plan's save (DCP has written a part, not its .metadata):
    the first checkpoint stays published and a start on the moved layout resumes from it."""
    from hetrun import _restart

    plan = layout([2], [[0]])
    pipe = new_pipeline(plan, window=0)
    x = torch.randn(4, 4, dtype=torch.float64)
    for _ in range(3):
        pipe.step(x, 0.5 * x)
    _restart.save(str(tmp_path / "ckpt"), pipe.module, pipe.optimizer, pipe.steps)
    pipe.step(x, 0.5 * x)

    def preempted(state, checkpoint_id):
        os.makedirs(checkpoint_id, exist_ok=True)
        with open(os.path.join(checkpoint_id, "__0_0.distcp"), "wb") as f:
            f.write(b"part")
        raise KeyboardInterrupt("preempted")

    monkeypatch.setattr(_restart.dcp, "save", preempted)
    with pytest.raises(KeyboardInterrupt):
        _restart.save(str(tmp_path / "ckpt"), pipe.module, pipe.optimizer, pipe.steps)
    monkeypatch.undo()
    plan.revision = 1  # the first re-plan's move was recorded
    resumed = new_pipeline(plan, replan="restart", checkpoint_dir=str(tmp_path / "ckpt"))
    assert resumed.steps == resumed.resumed_at == 3


def test_only_the_published_checkpoint_is_kept(world_of_one, tmp_path):
    from hetrun import _restart

    pipe = new_pipeline(layout([2], [[0]]), window=0)
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "notes.txt").write_text("the user's")
    for step in (1, 2, 3):
        _restart.save(str(tmp_path / "ckpt"), pipe.module, pipe.optimizer, step)
    names = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    published = (tmp_path / "ckpt" / "hetrun-latest").read_text().strip()
    assert published.startswith("step-3-"), published
    assert names == sorted(["hetrun-latest", "notes.txt", published]), names
