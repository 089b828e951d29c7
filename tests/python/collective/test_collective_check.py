"""`hetrun run --check-collectives` on CPU (Gloo), the real launcher and the real probes
(python -m hetrun.collective_check; docs/how-to/collective-check.md): a correct run lets the
workers start as usual and leaves a links fragment `hetrun plan --links` reads; a wrong value is
84, a stalled rank 75 within the deadline, a probe that cannot run 78, bad flags 64. At most 4
processes per test."""

import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]
HETRUN = str(pathlib.Path(os.environ.get("HETRUN_BIN", ROOT / "build" / "bin" / "hetrun")).resolve())
HERE = pathlib.Path(__file__).resolve().parent
WORKER = str(HERE / "allreduce_worker.py")
H100, A100 = "H100-SXM5-80GB:9.0:81090", "A100-SXM4-80GB:8.0:81049"
GENEROUS = "300s"  # a loaded machine imports torch slowly; the tests never assert speed

sys.path.insert(0, str(HERE.parent))
from conftest import free_port  # noqa: E402




def env_for(tmp_path, **more):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HETRUN_", "PET_", "OMPI_"))}
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore",
               HETRUN_TERMINATION_LOG=str(tmp_path / "termination-log"))
    env.update(more)
    return env


def hetrun_run(tmp_path, nproc, flags, env=None, python=sys.executable, gpus=None):
    cmd = [HETRUN, "run", "--nproc-per-node", str(nproc), "--master-port", str(free_port()),
           "--python", python]
    if gpus:
        cmd += ["--fake-gpus", ",".join(gpus)]
    cmd += flags + ["--", sys.executable, WORKER]
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env or env_for(tmp_path), cwd=tmp_path, capture_output=True,
                          text=True, timeout=900)
    proc.elapsed = time.monotonic() - started
    return proc


def worker_lines(proc):
    return [line for line in proc.stdout.splitlines() if line.startswith("worker rank=")]


def termination_log(tmp_path):
    return (tmp_path / "termination-log").read_text()


def plan_json(cluster, fragment=None):
    cmd = [HETRUN, "plan", "--cluster", str(cluster), "--model",
           str(ROOT / "examples" / "plan" / "demo-model.json"), "--json"]
    if fragment:
        cmd += ["--links", str(fragment)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def two_stage_cluster(tmp_path, gpus):
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({
        "gpus_per_pod": gpus, "network": "ib-200g", "nvlink": "nvlink3",
        "stages": [{"task": "light", "family": "ampere", "count": 1, "memory_bytes": 8e10},
                   {"task": "heavy", "family": "hopper", "count": 1, "memory_bytes": 8e10}]}))
    return cluster


def test_two_ranks_pass_then_the_workers_all_reduce_and_plan_reads_the_fragment(tmp_path):
    fragment = tmp_path / "links.json"
    proc = hetrun_run(tmp_path, 2, ["--check-collectives", "--check-collectives-timeout", GENEROUS,
                                    "--check-collectives-out", str(fragment)])
    assert proc.returncode == 0, proc.stderr[-6000:]
    passed = [line for line in proc.stderr.splitlines() if "collective check passed" in line]
    assert len(passed) == 1, proc.stderr[-6000:]
    assert "8 B to 8 MiB" in passed[0] and "on 2 ranks (gloo)" in passed[0], passed[0]
    assert "GB/s" in passed[0] and str(fragment) in passed[0], passed[0]
    print(passed[0])
    # The user's first attempt is untouched by the probes' group: both ranks meet and all-reduce.
    assert sorted(worker_lines(proc)) == ["worker rank=0 sum=3 attempt=0",
                                          "worker rank=1 sum=3 attempt=0"], proc.stdout
    links = json.loads(fragment.read_text())
    assert links["measured_by"] == "hetrun run --check-collectives", links
    assert links["world_size"] == 2 and links["nvlink"] > 0, links  # one node: the job's all-reduce
    cluster = two_stage_cluster(tmp_path, gpus=2)
    before = plan_json(cluster)["links"]["data_parallel"]
    after = plan_json(cluster, fragment)["links"]["data_parallel"]
    assert before[0]["link"]["gb_per_s"] == 300.0, before
    assert after[0]["link"]["gb_per_s"] == links["nvlink"], after
    assert after[0]["link"]["name"].endswith("GB/s measured"), after


def test_pipeline_plan_measures_p2p_between_stages_and_each_stages_group(tmp_path):
    cluster = two_stage_cluster(tmp_path, gpus=2)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_json(cluster)))
    fragment = tmp_path / "links.json"
    proc = hetrun_run(tmp_path, 4, ["--plan", str(plan), "--check-collectives",
                                    "--check-collectives-timeout", GENEROUS,
                                    "--check-collectives-out", str(fragment)])
    assert proc.returncode == 0, proc.stderr[-6000:]
    passed = next(line for line in proc.stderr.splitlines() if "collective check passed" in line)
    assert "p2p stage 0 -> 1" in passed and "stage 1 all-reduce" in passed, passed
    print(passed)
    assert len(worker_lines(proc)) == 4, proc.stdout
    links = json.loads(fragment.read_text())
    stages = links["stages"]
    assert [s["stage"] for s in stages] == [0, 1], links
    assert all(s["network"] > 0 and s["nvlink"] > 0 for s in stages), links
    measured = plan_json(cluster, fragment)
    boundary = measured["boundaries"][0]["link"]
    assert boundary["gb_per_s"] == min(s["network"] for s in stages), measured["boundaries"]
    assert plan_json(cluster)["boundaries"][0]["link"]["gb_per_s"] == 25.0


def test_wrong_value_on_one_rank_exits_84_naming_size_op_family_node_and_nccl_proto(tmp_path):
    env = env_for(tmp_path, HETRUN_COLLECTIVE_CHECK_FAULT="wrong:1:524288:all_reduce",
                  NCCL_PROTO="SIMPLE")
    proc = hetrun_run(tmp_path, 2, ["--check-collectives", "--check-collectives-timeout",
                                    GENEROUS], env=env, gpus=[H100, A100])
    assert proc.returncode == 84, proc.stderr[-6000:]
    log = termination_log(tmp_path)
    assert "collective check: wrong values in all_reduce at 512 KiB" in log, log
    assert "rank 1 (ampere, node 0)" in log and "rank 0" not in log.split("first:")[0], log
    assert "element 65536" in log and "NCCL_PROTO is 'SIMPLE'" in log, log
    assert "exit 84" in log, log
    assert worker_lines(proc) == [], proc.stdout  # no worker started


def test_stalled_rank_exits_75_within_the_deadline_naming_where_each_rank_was(tmp_path):
    env = env_for(tmp_path, HETRUN_COLLECTIVE_CHECK_FAULT="stall:1:8192:all_gather")
    # 60 s: the deadline counts from the probes' start, torch's import included; rank 0 must have
    # reached the stalled all-gather by then even on a loaded machine.
    proc = hetrun_run(tmp_path, 2, ["--check-collectives", "--check-collectives-timeout", "60s"],
                      env=env, gpus=[H100, A100])
    assert proc.returncode == 75, proc.stderr[-6000:]
    log = termination_log(tmp_path)
    assert "collective check timed out" in log and "within 60 s" in log, log
    assert "rank 1 (ampere, node 0) at all_gather at 8 KiB" in log, log
    assert "rank 0 (hopper, node 0) at all_gather at 8 KiB" in log, log
    assert "NCCL_PROTO is unset" in log, log
    assert worker_lines(proc) == [], proc.stdout
    assert proc.elapsed < 60 + 120, proc.elapsed  # the deadline, plus a generous stop and start
    print(f"stalled check ended after {proc.elapsed:.1f} s (deadline 60 s)")


def test_probe_without_torch_exits_78_naming_the_collective_check(tmp_path):
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no torch in this image')\n")
    wrapper = tmp_path / "python-without-torch"
    # Only the probe sees the shadowed torch; hetrun's own look-up of torch (the store) does not.
    wrapper.write_text(f"""#!/bin/sh
case "$*" in *hetrun.collective_check*) PYTHONPATH={shadow.parent}; export PYTHONPATH;; esac
exec {sys.executable} "$@"
""")
    wrapper.chmod(0o755)
    proc = hetrun_run(tmp_path, 2, ["--check-collectives"], python=str(wrapper))
    assert proc.returncode == 78, proc.stderr[-6000:]
    log = termination_log(tmp_path)
    assert "collective check could not run" in log and "no torch in this image" in log, log
    assert worker_lines(proc) == [], proc.stdout


def test_probe_interpreter_that_fails_exits_78_naming_the_collective_check(tmp_path):
    proc = hetrun_run(tmp_path, 2, ["--check-collectives"], python="/bin/false")
    assert proc.returncode == 78, proc.stderr[-6000:]
    assert "collective check could not run" in termination_log(tmp_path)


def test_bad_flags_exit_64_naming_the_flag(tmp_path):
    for flags, says in [
        (["--check-collectives", "--check-collectives-timeout", "0"], "--check-collectives-timeout '0'"),
        (["--check-collectives", "--check-collectives-timeout", "abc"], "--check-collectives-timeout 'abc'"),
        (["--check-collectives-timeout", "5s"], "go with --check-collectives"),
        (["--check-collectives", "--check-collectives-out", str(tmp_path / "no" / "f.json")],
         "--check-collectives-out"),
    ]:
        proc = hetrun_run(tmp_path, 1, flags)
        assert proc.returncode == 64, (flags, proc.stderr)
        assert says in proc.stderr, (flags, proc.stderr)
    proc = hetrun_run(tmp_path, 1, ["--check-collectives"],
                      env=env_for(tmp_path, HETRUN_COLLECTIVE_CHECK_TIMEOUT="soon"))
    assert proc.returncode == 78 and "HETRUN_COLLECTIVE_CHECK_TIMEOUT='soon'" in proc.stderr


def test_bad_test_hook_is_78_naming_the_variable(tmp_path):
    env = env_for(tmp_path, HETRUN_COLLECTIVE_CHECK_FAULT="wrong:1:1000")
    proc = hetrun_run(tmp_path, 2, ["--check-collectives"], env=env)
    assert proc.returncode == 78, proc.stderr[-6000:]
    log = termination_log(tmp_path)
    assert "HETRUN_COLLECTIVE_CHECK_FAULT='wrong:1:1000'" in log, log
    assert "1000 bytes is not a size of the check" in log, log


def test_dry_run_prints_the_check_and_starts_nothing(tmp_path):
    proc = hetrun_run(tmp_path, 2, ["--check-collectives", "--dry-run"])
    assert proc.returncode == 0, proc.stderr
    assert "# collective check (--check-collectives)" in proc.stdout, proc.stdout
    assert "deadline 60.2 s" in proc.stdout, proc.stdout
    assert worker_lines(proc) == []


def two_nodes(tmp_path, flags, node_flags=([], []), **env_more):
    """Two launchers on 127.0.0.1 (nodes 0 and 1, one rank each: H100 and A100; node_flags:
    each node's own flags besides `flags`): their exits, stderr, stdout and termination logs."""
    port = str(free_port())
    procs = []
    for node, gpu in ((0, H100), (1, A100)):
        env = env_for(tmp_path, **env_more)
        env["HETRUN_TERMINATION_LOG"] = str(tmp_path / f"termination-log-{node}")
        cmd = [HETRUN, "run", "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "1",
               "--master-addr", "127.0.0.1", "--master-port", port, "--rdzv-timeout", "300s",
               "--fake-gpus", gpu, "--python", sys.executable] + flags + node_flags[node] + [
               "--", sys.executable, WORKER]
        procs.append(subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    results = []
    for node, p in enumerate(procs):
        out, err = p.communicate(timeout=900)
        log = tmp_path / f"termination-log-{node}"
        results.append((p.returncode, err, out, log.read_text() if log.exists() else ""))
    return results


def test_two_nodes_pass_and_both_start_their_workers_node_0_writes_the_fragment(tmp_path):
    fragment = tmp_path / "links.json"
    results = two_nodes(tmp_path, ["--check-collectives", "--check-collectives-timeout", GENEROUS,
                                   "--check-collectives-out", str(fragment)])
    for code, err, out, _ in results:
        assert code == 0, err[-6000:]
        assert "collective check passed" in err and "on 2 ranks (gloo)" in err, err[-6000:]
    assert results[0][2].count("worker rank=0 sum=3 attempt=0") == 1, results[0][2]
    assert results[1][2].count("worker rank=1 sum=3 attempt=0") == 1, results[1][2]
    links = json.loads(fragment.read_text())
    assert links["nodes"] == 2 and links["network"] > 0 and "nvlink" not in links, links


def test_two_nodes_wrong_value_on_node_1_exits_84_on_both_naming_node_1(tmp_path):
    results = two_nodes(tmp_path, ["--check-collectives", "--check-collectives-timeout", GENEROUS],
                        HETRUN_COLLECTIVE_CHECK_FAULT="wrong:1:131072")
    for code, err, out, log in results:
        assert code == 84, err[-6000:]
        assert "wrong values in all_gather at 128 KiB; all_reduce at 128 KiB" in log, log
        assert "rank 1 (ampere, node 1)" in log, log
        assert "worker rank=" not in out, out


# --- what the probe proves on its own node, and what it trusts -------------------------------

def probe_module():
    import importlib
    return importlib.import_module("hetrun.collective_check")


def test_a_socket_interface_that_does_not_exist_here_exits_78_naming_it(tmp_path):
    """GLOO_SOCKET_IFNAME naming no interface of this node: every probe's init_process_group
    fails at once, and that was 75 (Volcano restarts the job for ever); it is a configuration
    error the probe proves on its own node: 78 naming it."""
    env = env_for(tmp_path, GLOO_SOCKET_IFNAME="nosuch0")
    proc = hetrun_run(tmp_path, 2, ["--check-collectives", "--check-collectives-timeout",
                                    GENEROUS], env=env)
    assert proc.returncode == 78, proc.stderr[-6000:]
    log = termination_log(tmp_path)
    assert "collective check cannot run" in log, log
    assert "GLOO_SOCKET_IFNAME='nosuch0' names nosuch0, not a network interface of this node" \
        in log, log
    assert worker_lines(proc) == [], proc.stdout
    print(f"bad interface: exit 78 after {proc.elapsed:.1f} s")


def test_socket_interface_variables_are_read_as_the_backends_read_them():
    fault = probe_module().socket_ifname_fault
    names = ["lo", "eth0", "ib0"]
    assert fault("GLOO_SOCKET_IFNAME", None, names) is None
    assert fault("GLOO_SOCKET_IFNAME", "eth0,lo", names) is None
    assert "names eth1" in fault("GLOO_SOCKET_IFNAME", "eth0,eth1", names)
    assert fault("NCCL_SOCKET_IFNAME", "eth", names) is None  # a prefix
    assert fault("NCCL_SOCKET_IFNAME", "=eth0", names) is None
    assert "matches no" in fault("NCCL_SOCKET_IFNAME", "=eth", names)
    assert "matches no" in fault("NCCL_SOCKET_IFNAME", "bond,enp", names)
    assert fault("NCCL_SOCKET_IFNAME", "^lo,docker", names) is None
    assert "excludes every" in fault("NCCL_SOCKET_IFNAME", "^lo,eth,ib", names)


def test_with_a_job_secret_an_unsealed_forged_record_is_ignored_and_the_check_passes(tmp_path):
    """A record another store client writes under the check's keys, claiming a wrong value: with
    a job secret it fails verification, is ignored, and the check passes (it ended the job with
    84 before); without a secret the store is unauthenticated and it counts (84)."""
    flags = ["--check-collectives", "--check-collectives-timeout", GENEROUS]
    env = env_for(tmp_path, HETRUN_COLLECTIVE_CHECK_FAULT="forge:1:131072:all_reduce",
                  HETRUN_JOB_SECRET="s3cret-of-this-job")
    proc = hetrun_run(tmp_path, 2, flags, env=env)
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert "collective check passed" in proc.stderr, proc.stderr[-6000:]
    assert "ignored the record at result/1: it fails verification" in proc.stderr, \
        proc.stderr[-6000:]
    env.pop("HETRUN_JOB_SECRET")
    proc = hetrun_run(tmp_path, 2, flags, env=env)
    assert proc.returncode == 84, proc.stderr[-6000:]


def test_store_records_with_fields_of_the_wrong_type_are_ignored_not_a_crash():
    """A store entry whose rank is a string (or any field of another type) once reached hetrun
    and aborted it; the probe keeps only entries as a probe writes them."""
    import torch.distributed as dist

    cc = probe_module()
    store = dist.HashStore()
    good = {"op": "all_reduce", "bytes": 1024, "rank": 1, "node": 0, "family": "hopper",
            "element": 3, "expected": 2.0, "got": 3.0, "wrong_elements": 1}
    store.set("result/0", json.dumps([dict(good, rank="0"), dict(good, rank=0, bytes="8")]))
    store.set("result/1", json.dumps([good, dict(good, family=["x"]), dict(good, rank=0), 5]))
    probe = type("P", (), {"rank": 0, "world": 2, "key": ""})()
    assert cc.collect(store, probe) == [good]


def test_a_128_rank_job_with_one_corrupting_gpu_gets_a_bounded_summary():
    """One corrupting GPU makes every rank see wrong values at every size: 128 x 42 entries were a
    1.08 MB result, over what hetrun read (78 instead of 84). The summary keeps the first few,
    the count, every size and every rank."""
    cc = probe_module()
    wrong = [{"op": op, "bytes": size, "rank": r, "node": r // 8, "family": "hopper",
              "element": 12345, "expected": 1234.0, "got": 1235.0, "wrong_elements": 99,
              "from_rank": 17}
             for r in range(128) for op in cc.OPS for size in cc.SIZES]
    assert len(json.dumps({"wrong": wrong}, indent=1)) > 1 << 20  # the file it was
    summary = cc.summarise(wrong)
    text = json.dumps(summary, indent=1)
    assert len(text) < 256 << 10, len(text)  # within hetrun's bound for 128 ranks (384 KiB)
    assert summary["wrong_total"] == 128 * 42 and len(summary["wrong"]) == cc.WRONG_KEPT
    assert summary["wrong_sizes"] == {op: cc.SIZES for op in cc.OPS}
    assert [r["rank"] for r in summary["wrong_ranks"]] == list(range(128))


def test_check_collectives_on_node_0_only_exits_78_on_both_naming_the_difference(tmp_path):
    """Node 0 with --check-collectives, node 1 without: node 0's probes would wait for node 1's
    for ever (75 on every restart); the rendezvous compares it like the job's size."""
    results = two_nodes(tmp_path, [], node_flags=(["--check-collectives"], []))
    for code, err, out, log in results:
        assert code == 78, err[-6000:]
        assert "--check-collectives (a job-wide setting" in err and "has it on" in err \
            and "has it off" in err, err[-6000:]
        assert "worker rank=" not in out, out
