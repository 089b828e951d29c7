"""A worker for the live fail-slow test: hetrun.Tuner without a model over Gloo, each step a
timed region of sleep proportional to the share (HETRUN_EMULATE_SLOWDOWN stretches it), so the
tuner measures 3 hoppers and 1 ampere and one hopper turning slower at a step."""

import argparse
import json
import pathlib
import time

import torch.distributed as dist

import hetrun


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=120)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    tuner = hetrun.Tuner(global_batch=64, window=5, warmup=2)
    reports = []
    for _ in range(args.steps):
        with tuner.step():
            time.sleep(0.001 + 0.0004 * tuner.share)
        if tuner.report is not None and (not reports or reports[-1]["window"] != tuner.report.window):
            r = tuner.report
            reports.append({"window": r.window, "step": tuner.step_index,
                            "fail_slow": r.fail_slow, "ratio": r.slowdown_ratio,
                            "shares": r.shares_next})
    out = pathlib.Path(args.out) / f"rank_{dist.get_rank()}.json"
    out.write_text(json.dumps({"reports": reports}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
