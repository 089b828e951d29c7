"""Per-model memory ceilings under FSDP2 (docs/how-to/memory-ceiling.md, docs/ARCHITECTURE.md
§5.8): an H200 beside an A100, 48 and 16 of 64 samples, 4 GiB declared per sample. With the
job-wide ceiling (the A100's, hetrun run --memory-ceiling job) every micro-batch is capped at the
A100's 19 samples and the H200's 48 need 3; with per-model ceilings (--memory-ceiling model) the
H200's cap is 34 and the job-wide count falls to 2 on both ranks. The gradients stay the
one-process gradients either way. Step times are printed (a figure, not asserted)."""

import pathlib

WORKERS = pathlib.Path(__file__).resolve().parent / "fsdp_workers.py"
MIB = 1 << 20
RESERVE = 2048 * MIB
H200, A100 = 143294 * MIB - RESERVE, 81049 * MIB - RESERVE  # usable minus the 2 GiB reserve
PER_SAMPLE = 4096 * MIB


def run(workers, h200_ceiling):
    extra = {"per_rank": {0: {"HETRUN_MEMORY_CEILING_BYTES": str(h200_ceiling),
                              "HETRUN_GPU_MODEL": "h200"},
                          1: {"HETRUN_MEMORY_CEILING_BYTES": str(A100),
                              "HETRUN_GPU_MODEL": "a100-sxm4-80gb"}}}
    return workers("memory_modes", 2, extra=extra, args=(str(PER_SAMPLE),), script=WORKERS)


def test_model_ceilings_give_the_h200_fewer_micro_batches_and_the_same_gradients(workers):
    job = run(workers, A100)
    model = run(workers, H200)
    assert [r["max_micro_batch"] for r in job] == [19, 19]
    assert [r["max_micro_batch"] for r in model] == [34, 19]
    assert [r["sizes"][0] for r in job] == [[16, 16, 16], [6, 5, 5]]
    assert [r["sizes"][0] for r in model] == [[24, 24], [8, 8]]
    for r in job + model:
        assert r["diff"] <= 1e-6, r
    for name, results in (("job", job), ("model", model)):
        ms = [sum(r["step_ms"][1:]) / 2 for r in results]
        print(f"--memory-ceiling {name}: micro-batches {len(results[0]['sizes'][0])}, "
              f"step ms per rank (steps 2-3) {ms[0]:.1f} / {ms[1]:.1f}")
