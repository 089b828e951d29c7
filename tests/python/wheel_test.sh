#!/usr/bin/env bash
# python.wheel: `pip install` brings the launcher (docs/how-to/install.md).
#   1. builds the wheel as `make wheel` does (no build isolation, against the build Python's
#      torch, in the persistent build-python/ tree) and checks what it holds;
#   2. installs it into a fresh virtualenv without torch: check, inspect, plan and simulate run
#      from VENV/bin/hetrun, and a multi-node run (which needs the plugin's torch) exits 78 naming
#      the torch it was built for;
#   3. gives that venv the build Python's torch through a .pth file (no second download): a faked
#      record (another torch version) exits 78 naming both versions, then VENV/bin/hetrun, not
#      activated and with PATH lacking the venv, runs two workers of a script that imports torch
#      and hetrun and checks it got the venv's interpreter and the venv's hetrun; then two nodes
#      of one worker each meet through the wheel's plugin.
# Usage: wheel_test.sh SOURCE_DIR BUILD_PYTHON
set -euo pipefail
src=$1 python=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { printf 'wheel_test: %s (%d s)\n' "$*" $((SECONDS - started)); }
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

step "building the wheel (build-python/ reused)"
"$python" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  --wheel-dir "$work/dist" "$src" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "pip wheel"; }
wheel=$(echo "$work"/dist/hetrun-*.whl)
[[ -f $wheel ]] || fail "no wheel in $work/dist"
"$python" - "$wheel" <<'EOF' || fail "wheel contents"
import stat, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
script = [n for n in names if n.endswith(".data/scripts/hetrun")]
assert script, "no bin/hetrun script in the wheel"
mode = z.getinfo(script[0]).external_attr >> 16
assert mode & stat.S_IXUSR, f"bin/hetrun is not executable in the wheel ({oct(mode)})"
assert z.read(script[0])[:4] == b"\x7fELF", "bin/hetrun is the C++ binary, not a shim"
for need in ("hetrun/__init__.py", "hetrun/libhetrun_rendezvous.so",
             "hetrun/libhetrun_rendezvous.torch"):
    assert need in names, f"{need} missing from the wheel"
assert any(n.startswith("hetrun/_core.") for n in names), "hetrun._core missing"
print("wheel holds", script[0], "and the plugin beside hetrun/")
EOF

step "fresh virtualenv without torch"
venv=$work/venv
"$python" -m venv --without-pip "$venv"
"$python" -m pip --python "$venv/bin/python" install --quiet --disable-pip-version-check \
  --no-deps --no-index "$wheel" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "pip install"; }
[[ -x $venv/bin/hetrun ]] || fail "pip did not install $venv/bin/hetrun"
# A clean environment: PATH without the venv, no VIRTUAL_ENV, nothing of the build's.
clean=(env -i PATH=/usr/bin:/bin HOME="$work" TMPDIR="$work" OMP_NUM_THREADS=1
       HETRUN_TERMINATION_LOG="$work/termination.log" HETRUN_RUN_BASE="$work/runs")
if "${clean[@]}" "$venv/bin/python" -c "import torch" 2>/dev/null; then
  fail "torch is importable in the fresh venv before the .pth"
fi
"${clean[@]}" "$venv/bin/hetrun" --version
"${clean[@]}" "$venv/bin/hetrun" plan --cluster "$src/examples/plan/seed-cluster.json" \
  --model "$src/examples/plan/seed-model.json" --emit megatron --one-per-line >"$work/plan.txt"
grep -qx 'Et\*3|(t\*14|)\*4t\*3L' "$work/plan.txt" || fail "plan without torch: $(cat "$work/plan.txt")"
"${clean[@]}" "$venv/bin/hetrun" simulate --scenario "$src/examples/scenarios/demo_fit.json" \
  --json >/dev/null || fail "simulate without torch"
core=$(echo "$venv"/lib/python3*/site-packages/hetrun/_core.*.so)
"${clean[@]}" "$venv/bin/hetrun" inspect "$core" >/dev/null || fail "inspect without torch"
"${clean[@]}" "$venv/bin/hetrun" check --target-arch 8.0,9.0 --arch-list '8.0;9.0' "$core" \
  >/dev/null || fail "check without torch"
multi_node() {  # node 1 of 2: the plugin's torch is checked before anything else
  "${clean[@]}" HETRUN_FAKE_GPUS=A100-SXM4-80GB:8.0:81049 "$venv/bin/hetrun" run --nnodes 2 \
    --node-rank 1 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port 1 -- true
}
rc=0; multi_node 2>"$work/no-torch.err" || rc=$?
[[ $rc == 78 ]] || { cat "$work/no-torch.err"; fail "multi-node without torch: exit $rc, not 78"; }
grep -q "built for torch 2\.[0-9.]*.*, but no torch is installed" "$work/no-torch.err" ||
  fail "no-torch message: $(cat "$work/no-torch.err")"

step "torch through a .pth file"
site=$("$python" -c "import importlib.util, os; print(os.path.dirname(os.path.dirname(importlib.util.find_spec('torch').origin)))")
echo "$site" >"$(dirname "$(dirname "$core")")/build_torch.pth"
record=$(dirname "$core")/libhetrun_rendezvous.torch
built=$(sed -n 's/^torch_version=//p' "$record")
cp "$record" "$work/record"
sed -i 's/^torch_version=.*/torch_version=2.10.0+cpu/' "$record"
rc=0; multi_node 2>"$work/mismatch.err" || rc=$?
[[ $rc == 78 ]] || { cat "$work/mismatch.err"; fail "torch version mismatch: exit $rc, not 78"; }
grep -qF "built for torch 2.10.0+cpu, but the installed torch is $built" "$work/mismatch.err" ||
  fail "mismatch message: $(cat "$work/mismatch.err")"
cp "$work/record" "$record"

cat >"$work/worker.py" <<'EOF'
import os, sys
import torch
import torch.distributed as dist
import hetrun
venv = os.environ["EXPECT_VENV"]
assert sys.executable == os.path.join(venv, "bin", "python"), sys.executable
assert hetrun.__file__.startswith(venv + os.sep), hetrun.__file__
job = hetrun.init()
dist.init_process_group("gloo")
total = torch.tensor([float(job.rank + 1)])
dist.all_reduce(total)
assert total.item() == job.world_size * (job.world_size + 1) / 2, total
print(f"worker {job.rank}/{job.world_size} python={sys.executable} torch={torch.__version__}")
dist.destroy_process_group()
EOF
step "two workers from $venv/bin/hetrun"
"${clean[@]}" EXPECT_VENV="$venv" "$venv/bin/hetrun" run --nproc-per-node 2 "$work/worker.py" \
  >"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "hetrun run from the wheel"; }
[[ $(grep -c "python=$venv/bin/python" "$work/run.out") == 2 ]] ||
  { cat "$work/run.out"; fail "two workers on the venv's python"; }

step "two nodes through the wheel's plugin"
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pids=()
for node in 0 1; do
  "${clean[@]}" EXPECT_VENV="$venv" HETRUN_FAKE_GPUS=A100-SXM4-80GB:8.0:81049 \
    "$venv/bin/hetrun" run --nnodes 2 --node-rank $node --nproc-per-node 1 \
    --master-addr 127.0.0.1 --master-port "$port" --rdzv-timeout 60s "$work/worker.py" \
    >"$work/node$node.out" 2>&1 &
  pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
[[ $rc == 0 ]] || { cat "$work"/node*.out; fail "two nodes from the wheel: exit $rc"; }
grep -q "worker 0/2" "$work/node0.out" && grep -q "worker 1/2" "$work/node1.out" ||
  { cat "$work"/node*.out; fail "two nodes: a worker is missing"; }
step "passed"
