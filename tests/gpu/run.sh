#!/usr/bin/env bash
# GPU validation suite (docs/how-to/gpu-validation.md): builds hetrun against this machine's own torch
# and nvcc, then proves on the real GPU what the CPU test suite can only compile: kernel-image
# verdicts against cuobjdump and the driver, fixture launches (error 209 vs PTX JIT), the memory
# ceiling, the NCCL process group and the tuner's cost, 200 training steps and the collective check
# on NCCL, a DeepSpeed ZeRO-3 step. Writes DIR/summary.json (per-step status and figures) and DIR/gpu-validation.log.
#
#   tests/gpu/run.sh [--out DIR] [--dry-run] [--build-dir DIR] [--budget SECONDS] [--jobs N]
#                    [--deps DIR] [--cmake-arg ARG]...
#
# --out        results folder (default: $OUT when set, else ./gpu-results)
# --dry-run    no GPU needed: argument parsing, tool discovery, the commands that would run, the
#              CPU-capable arch checks on an existing build, and the summary with every GPU step
#              "skipped (dry run)". Never configures or builds.
# --build-dir  build tree (default: SOURCE/build-gpu-validation; a dry run reuses it as is)
# --budget     seconds for the whole run (default 480); every step's timeout is cut to fit
# --jobs       build parallelism (default: nproc)
# --deps       C++ dependencies staged by tests/gpu/stage-deps.sh (default: SOURCE/.gpu-deps when
#              it exists); added to CMAKE_PREFIX_PATH
# --cmake-arg  extra configure argument, e.g. -DCMAKE_CUDA_ARCHITECTURES=90-real
# Exit: 0 every check passed (or was skipped), 1 a check failed, 64 usage error.
set -uo pipefail

usage() { sed -n '8,21p' "$0" | sed 's/^# \{0,1\}//'; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${OUT:-./gpu-results}
dry_run=0
build=""
budget=480
jobs=$(nproc 2>/dev/null || echo 4)
cmake_args=()
deps=""
while (($#)); do
  case $1 in
    --out) out=${2:?--out needs a DIR}; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --dry-run) dry_run=1; shift ;;
    --build-dir) build=${2:?--build-dir needs a DIR}; shift 2 ;;
    --build-dir=*) build=${1#--build-dir=}; shift ;;
    --budget) budget=${2:?--budget needs SECONDS}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs N}; shift 2 ;;
    --deps) deps=${2:?--deps needs a DIR}; shift 2 ;;
    --deps=*) deps=${1#--deps=}; shift ;;
    --cmake-arg) cmake_args+=("${2:?--cmake-arg needs ARG}"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 64 ;;
  esac
done
if ! [[ $budget =~ ^[0-9]+$ ]] || ((budget < 30)); then
  echo "run.sh: --budget must be a number of seconds >= 30, got '$budget'" >&2; exit 64
fi
if ! [[ $jobs =~ ^[0-9]+$ ]] || ((jobs < 1)); then
  echo "run.sh: --jobs must be a positive number, got '$jobs'" >&2; exit 64
fi
build=${build:-$src/build-gpu-validation}
if [[ -n $deps ]]; then
  [[ -d $deps/usr/include ]] || { echo "run.sh: --deps '$deps' has no usr/include (stage it with tests/gpu/stage-deps.sh)" >&2; exit 64; }
elif [[ -d $src/.gpu-deps/usr/include ]]; then
  deps=$src/.gpu-deps
fi
if [[ -n $deps ]]; then
  deps=$(cd "$deps" && pwd)
  cmake_args=("-DCMAKE_PREFIX_PATH=$deps/usr" "${cmake_args[@]}")
fi
mkdir -p "$out" || { echo "run.sh: cannot create --out '$out'" >&2; exit 64; }
out=$(cd "$out" && pwd)
((dry_run)) || mkdir -p "$build" || { echo "run.sh: cannot create --build-dir '$build'" >&2; exit 64; }
[[ -d $build ]] && build=$(cd "$build" && pwd)
log=$out/gpu-validation.log
: >"$log"
exec > >(tee -a "$log") 2>&1
tee_pid=$!
work=$(mktemp -d "${TMPDIR:-/tmp}/hetrun-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.tsv
: >"$results"
start_epoch=$(date +%s)
python=${PYTHON:-$(command -v python3 || true)}
checks=("$python" "$here/gpu_checks.py")

echo "== hetrun GPU validation $(date -u +%FT%TZ) dry_run=$dry_run budget=${budget}s jobs=$jobs"
echo "== source $src  build $build  out $out"

# ---- recording -------------------------------------------------------------------------------
clean() { tr '\t\n' '  ' <<<"$*" | sed 's/ *$//'; }
fig() { printf 'F\t%s\t%s\t%s\n' "$1" "$2" "$(clean "$3")" >>"$results"; }
figs_from() {  # figs_from STEP FILE: every key=value line of FILE becomes a figure
  local key value
  while IFS='=' read -r key value; do
    [[ $key =~ ^[a-z0-9_.]+$ ]] && fig "$1" "$key" "$value"
  done <"$2"
}
kv() { sed -n "s/^$1=//p" "$2" | tail -1; }  # kv KEY FILE
step_begin() { step_name=$1; step_start=$(date +%s); step_fail=""; echo; echo "== step $1"; }
fail() { echo "FAIL [$step_name]: $*"; step_fail+="${step_fail:+; }$*"; }
step_end() {  # step_end [STATUS]: pass/fail from fail() calls unless STATUS is given
  local status=${1:-} detail=${2:-}
  if [[ -z $status ]]; then
    if [[ -n $step_fail ]]; then status=fail detail=$step_fail; else status=pass; fi
  fi
  printf 'S\t%s\t%s\t%s\t%s\n' "$step_name" "$status" "$(($(date +%s) - step_start))" \
    "$(clean "$detail")" >>"$results"
  echo "== step $step_name: $status${detail:+ ($detail)}"
}
left() { echo $((budget - ($(date +%s) - start_epoch))); }
# run_for SECONDS OUTFILE CMD...: runs CMD with a timeout cut to the budget left; output goes to
# OUTFILE (stdout) and the log (both). Returns the command's status (124 on timeout, 125 when no budget is left).
run_for() {
  local want=$1 file=$2 t
  shift 2
  t=$(left)
  ((t > want)) && t=$want
  if ((t < 5)); then
    echo "(no budget left for: $*)" | tee "$file"
    return 125
  fi
  echo "\$ (timeout ${t}s) $*"
  # stdout alone is parsed (JSON, key=value); stderr goes to the log.
  timeout --kill-after=10 "$t" "$@" >"$file" 2>"$file.err"
  local rc=$?
  cat "$file" "$file.err"
  ((rc == 124 || rc == 137)) && echo "(timed out after ${t}s)"
  return "$rc"
}
free_port() {
  "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# One-rank runtime environment (worker_identity.h), as `hetrun run` would give a single worker:
# sets RANK_ENV, an `env ...` prefix for a command (run_for runs it under timeout, which cannot
# call a shell function).
rank_env() {
  RANK_ENV=(env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1
            "MASTER_PORT=$(free_port)")
}
skip_gpu() { step_begin "$1"; step_end "skipped (dry run)" "${2:-needs a GPU}"; }

# ---- 1. tools --------------------------------------------------------------------------------
step_begin tools
find_tool() {  # find_tool NAME [CANDIDATES...]: first executable found, else ""
  local name=$1 c
  shift
  for c in "$(command -v "$name" 2>/dev/null)" "$@"; do
    [[ -n $c && -x $c ]] && { echo "$c"; return; }
  done
}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
nvcc=$(find_tool nvcc "$cuda_home/bin/nvcc")
cuobjdump=$(find_tool cuobjdump "$cuda_home/bin/cuobjdump")
cmake=$(find_tool cmake)
# shellcheck disable=SC2034  # read through ${!t} below; the generator of -G Ninja
ninja=$(find_tool ninja)
nvidia_smi=$(find_tool nvidia-smi)
for t in python nvcc cuobjdump cmake ninja nvidia_smi; do
  fig tools "$t" "${!t:-missing}"
done
torch_lib=""
if [[ -n $python ]]; then
  torch_info=$("$python" -c 'import os, torch; print(torch.__version__, torch.version.cuda, os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null | tail -1)
  if [[ -n $torch_info ]]; then
    read -r torch_version torch_cuda torch_lib <<<"$torch_info"
    fig tools torch_version "$torch_version"
    fig tools torch_cuda "$torch_cuda"
  else
    fig tools torch_version missing
  fi
else
  fail "no python3 (set PYTHON): the summary and the JSON checks need it"
fi
[[ -n $nvcc ]] && fig tools nvcc_version "$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
if [[ -n $nvidia_smi ]]; then
  "$nvidia_smi" --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader \
    >"$work/smi.txt" 2>&1
  cat "$work/smi.txt"
  fig tools gpu "$(head -1 "$work/smi.txt")"
fi
fig tools cores "$(nproc 2>/dev/null)"
if ((!dry_run)); then
  for t in nvcc cuobjdump cmake ninja nvidia_smi; do
    [[ -z ${!t} ]] && fail "$t not found"
  done
  [[ -z $torch_lib ]] && fail "python3 has no torch"
fi
if [[ -z $python ]]; then
  # Without python nothing can be summarised: say so and stop.
  step_end
  echo "run.sh: python3 is required" >&2
  exit 1
fi
step_end

# ---- 2. build --------------------------------------------------------------------------------
# Only the targets the checks need; torch from this machine's python3, not .venv.
targets=(hetrun hetrun_kernels hetrun_arch_fixtures gpu_fixtures gpu_launch_fixture
         gpu_memory_cap_check gpu_nccl_check gpu_bucket_check hetrun_trainer)
configure=("${cmake:-cmake}" -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
           -DHETRUN_PYTHON="$python" -DHETRUN_BUILD_BENCH=OFF -DHETRUN_WITH_CUDA=ON
           -DHETRUN_BUILD_GPU_TESTS=ON
           -DHETRUN_WITH_TORCH=ON "${cmake_args[@]}")
compile=("${cmake:-cmake}" --build "$build" -j "$jobs" --target "${targets[@]}")
step_begin build
fig build configure "${configure[*]}"
fig build deps "${deps:-none (system packages)}"
[[ -n $deps && -f $deps/STAGED ]] && fig build deps_staged "$(head -1 "$deps/STAGED")"
fig build compile "${compile[*]}"
if ((dry_run)); then
  echo "would run: ${configure[*]}"
  echo "would run: ${compile[*]}"
  if [[ -f $build/CMakeCache.txt && -x $build/bin/hetrun ]]; then
    fig build reused "$build"
    step_end pass "dry run: reused $build, not rebuilt"
  else
    step_end "skipped (dry run)" "no built tree at $build"
  fi
else
  run_for 90 "$work/configure.txt" "${configure[@]}" || fail "configure failed (see log)"
  if [[ -z $step_fail ]]; then
    run_for 330 "$work/compile.txt" "${compile[@]}" || fail "build failed (see log)"
  fi
  step_end
fi

hetrun=$build/bin/hetrun
kernels_lib=$(find "$build" -name 'libhetrun_kernels.so*' -type f 2>/dev/null | head -1)
arch_fixtures=$build/tests/runtime/arch/fixtures/out
gpu_fixtures=$build/tests/gpu/fixtures
bin_of() { find "$build" -name "$1" -type f -perm -u+x 2>/dev/null | head -1; }

# ---- 3. kernel images: inspect/check against cuobjdump and the driver ------------------------
# Expected 9.0 verdicts of the fixtures (cuda_facts.md §1): the launch step checks them on the GPU.
declare -A expect=([libsm80.so]=missing [libsm90.so]=sass [libptx90.so]=ptx-jit
                   [libsm80ptx80.so]=ptx-jit)
declare -A verdict_of=()
step_begin arch_images
files=()
((dry_run)) || [[ -z $torch_lib ]] || files+=("$torch_lib/libtorch_cuda.so")
[[ -n $kernels_lib ]] && files+=("$kernels_lib")
for f in libsm80.so libsm90.so libptx90.so; do files+=("$arch_fixtures/$f"); done
files+=("$gpu_fixtures/libsm80ptx80.so")
if ((dry_run)); then
  fig arch_images libtorch_cuda "skipped in a dry run (large; checked on the GPU machine)"
fi
if [[ ! -x $hetrun ]]; then
  if ((dry_run)); then step_end "skipped (dry run)" "no hetrun binary in $build"
  else fail "no hetrun binary at $hetrun"; step_end; fi
else
  checked=0
  for f in "${files[@]}"; do
    name=$(basename "$f")
    if [[ ! -f $f ]]; then
      if ((dry_run)); then fig arch_images "$name.status" "not built"; else fail "$f missing"; fi
      continue
    fi
    checked=$((checked + 1))
    run_for 120 "$work/inspect.json" "$hetrun" inspect --json "$f" || fail "$name: hetrun inspect failed"
    # In a dry run nothing probes a GPU: the driver confirmation is skipped by check itself.
    run_for 240 "$work/check.json" "$hetrun" check --json --target-arch 9.0 "$f"
    rc=$?
    ((rc == 0 || rc == 80)) || fail "$name: hetrun check exited $rc"
    if "${checks[@]}" verdict "$work/check.json" 9.0 >"$work/verdict.txt" 2>&1; then
      cat "$work/verdict.txt"
      v=$(kv verdict "$work/verdict.txt")
      verdict_of[$name]=$v
      fig arch_images "$name.verdict_9_0" "$v"
      if [[ -n ${expect[$name]:-} && $v != "${expect[$name]}" ]]; then
        fail "$name: check says $v on 9.0, expected ${expect[$name]}"
      fi
      [[ $v == missing ]] && ((rc != 80)) && fail "$name: verdict missing but check exited $rc, not 80"
      if ((!dry_run)); then
        loaded=$(kv driver_loaded "$work/verdict.txt")
        no_binary=$(kv driver_no_binary "$work/verdict.txt")
        expected=$(kv driver_expected "$work/verdict.txt")
        if [[ -z $loaded ]]; then
          fail "$name: the driver-load confirmation did not run ($(kv driver_load "$work/verdict.txt"))"
        else
          fig arch_images "$name.driver_loaded" "$loaded"
          fig arch_images "$name.driver_no_binary" "$no_binary"
          ((loaded >= expected)) || fail "$name: driver loaded $loaded modules, check expected $expected"
          [[ $v == missing ]] && ((loaded > 0)) && fail "$name: check says missing but the driver loaded $loaded modules"
        fi
      fi
    else
      cat "$work/verdict.txt"
      fail "$name: unreadable hetrun check --json"
    fi
    if [[ -n $cuobjdump ]]; then
      run_for 120 "$work/cuobjdump.txt" "$cuobjdump" --list-elf --list-ptx "$f" ||
        echo "(cuobjdump exited non-zero)"
      if "${checks[@]}" compare "$work/inspect.json" "$work/cuobjdump.txt" >"$work/cmp.txt" 2>&1; then
        cat "$work/cmp.txt"
        [[ $(kv images_agree "$work/cmp.txt") == 1 ]] ||
          fail "$name: hetrun inspect and cuobjdump list different images"
        fig arch_images "$name.images" "sass $(kv cuobjdump_sass "$work/cmp.txt") ptx $(kv cuobjdump_ptx "$work/cmp.txt")"
        runs=$(( $(kv cuobjdump_sass_9_0 "$work/cmp.txt") || $(kv cuobjdump_ptx_9_0 "$work/cmp.txt") ))
        if [[ -n ${verdict_of[$name]:-} ]]; then
          v=${verdict_of[$name]}
          if ((runs)) && [[ $v == missing ]]; then
            fail "$name: check says missing on 9.0 but cuobjdump lists an image for 9.0"
          elif ((!runs)) && [[ $v != missing ]]; then
            fail "$name: check says $v on 9.0 but cuobjdump lists no image for 9.0"
          fi
        fi
      else
        cat "$work/cmp.txt"
        fail "$name: could not compare with cuobjdump"
      fi
    else
      fig arch_images "$name.cuobjdump" "skipped (no cuobjdump)"
    fi
  done
  fig arch_images files_checked "$checked"
  if ((checked == 0 && dry_run)); then step_end "skipped (dry run)" "no fixtures built in $build"
  else step_end; fi
fi

# ---- 4. fixture launches on the GPU ----------------------------------------------------------
if ((dry_run)); then
  skip_gpu fixture_launch "would launch ${!expect[*]} with gpu_launch_fixture"
else
  step_begin fixture_launch
  launcher=$(bin_of gpu_launch_fixture)
  launch() {  # launch PATH KEY [ENV...]: sets launch_result, records it and the failed call
    local path=$1 key=$2
    shift 2
    run_for 60 "$work/launch.txt" env "$@" "$launcher" "$path"
    local line
    line=$(grep '^launch ' "$work/launch.txt" | tail -1)
    launch_result=$(sed -n 's/.* result=\([-0-9]*\).*/\1/p' <<<"$line")
    fig fixture_launch "$key.result" "${launch_result:-none}"
    fig fixture_launch "$key.error" "$(sed -n 's/.* name=\([^ ]*\) failed_call=\(.*\)/\1 at \2/p' <<<"$line")"
  }
  if [[ -z $launcher ]]; then
    fail "gpu_launch_fixture was not built"
  else
    for name in libsm80.so libsm90.so libptx90.so; do
      launch "$arch_fixtures/$name" "$name"
      if [[ $name == libsm80.so ]]; then
        [[ $launch_result == 209 ]] || fail "libsm80.so: expected error 209 on sm_90, got ${launch_result:-no result}"
      else
        [[ $launch_result == 0 ]] || fail "$name: expected a launch, got ${launch_result:-no result}"
      fi
      # check's prediction: launches iff the verdict is not missing.
      v=${verdict_of[$name]:-}
      if [[ -n $v ]]; then
        predicted=$([[ $v == missing ]] && echo 1 || echo 0)
        actual=$([[ $launch_result == 0 ]] && echo 0 || echo 1)
        [[ $predicted == "$actual" ]] || fail "$name: check predicted '$v' but the launch returned $launch_result"
      fi
    done
    # sm_80 SASS + compute_80 PTX: its device-link stub holds sm_80 SASS only. Launched with lazy
    # and with eager module loading (eager loads every registered module, the stub included).
    stub_blocks=false
    for mode in LAZY EAGER; do
      launch "$gpu_fixtures/libsm80ptx80.so" "libsm80ptx80.so.$mode" \
        CUDA_MODULE_LOADING=$mode
      [[ $launch_result == 0 ]] || stub_blocks=true
    done
    fig fixture_launch dlink_stub_blocks_ptx_launch "$stub_blocks"
    v=${verdict_of[libsm80ptx80.so]:-}
    if $stub_blocks && [[ $v != missing ]]; then
      fail "libsm80ptx80.so did not launch on sm_90 (device-link stub?) but check says '$v'"
    fi
    $stub_blocks || [[ $v == ptx-jit ]] || fail "libsm80ptx80.so launched through PTX JIT but check says '$v'"
  fi
  step_end
fi

# ---- 5. memory: the probe's usable memory, and the ceiling against a real OOM ----------------
if ((dry_run)); then
  skip_gpu memory "would run: hetrun run -- printenv HETRUN_MEMORY_CEILING_BYTES; gpu_memory_cap_check"
else
  step_begin memory
  # The preflight's probe (launcher/gpu_probe) and ceiling, as a real worker receives it.
  run_for 90 "$work/run.txt" "$hetrun" run --nproc-per-node 1 -- printenv HETRUN_MEMORY_CEILING_BYTES
  rc=$?
  ceiling=$(grep -E '^[0-9]+$' "$work/run.txt" | tail -1)
  if ((rc == 0)) && [[ -n $ceiling ]]; then
    fig memory preflight_ceiling_bytes "$ceiling"
    fig memory preflight_ceiling_mib "$((ceiling / 1048576))"
  else
    fail "hetrun run preflight gave no HETRUN_MEMORY_CEILING_BYTES (exit $rc)"
  fi
  checker=$(bin_of gpu_memory_cap_check)
  gib=1073741824
  if [[ -z $checker ]]; then
    fail "gpu_memory_cap_check was not built"
  else
    rank_env
    run_for 90 "$work/mem.txt" "${RANK_ENV[@]}" HETRUN_MEMORY_CEILING_BYTES=$((8 * gib)) \
      "$checker" $((6 * gib)) $((10 * gib))
    rc=$?
    figs_from memory "$work/mem.txt"
    fig memory ceiling_bytes $((8 * gib))
    ((rc == 0)) || fail "ceiling 8 GiB: 6 GiB must allocate and 10 GiB must raise torch's OOM (exit $rc)"
  fi
  step_end
fi

# ---- 6. NCCL: the runtime's process group and the tuner's all-gather -------------------------
# One rank: NCCL refuses two ranks of one communicator on the same GPU ("Duplicate GPU
# detected"), so several ranks need several GPUs (or Gloo, which the CPU suite covers).
gather_us=""
if ((dry_run)); then
  skip_gpu nccl "would run: gpu_nccl_check 200 on one rank"
else
  step_begin nccl
  nccl_bin=$(bin_of gpu_nccl_check)
  if [[ -z $nccl_bin ]]; then
    fail "gpu_nccl_check was not built"
  else
    rank_env
    run_for 90 "$work/nccl.txt" "${RANK_ENV[@]}" "$nccl_bin" 200 || fail "gpu_nccl_check failed"
    figs_from nccl "$work/nccl.txt"
    [[ $(kv backend "$work/nccl.txt") == nccl ]] || fail "the runtime did not choose NCCL"
    gather_us=$(kv allgather_event_us_median "$work/nccl.txt")
  fi
  step_end
fi

# ---- 6b. buckets: GradientReducer over NCCL, event-timed compute ending at the last bucket ------
if ((dry_run)); then
  skip_gpu buckets "would run: gpu_bucket_check 20 on one rank"
else
  step_begin buckets
  bucket_bin=$(bin_of gpu_bucket_check)
  if [[ -z $bucket_bin ]]; then
    fail "gpu_bucket_check was not built"
  else
    rank_env
    run_for 90 "$work/buckets.txt" "${RANK_ENV[@]}" "$bucket_bin" 20 ||
      fail "gpu_bucket_check: gradients differ from the unbucketed ones or a bucket did not complete"
    figs_from buckets "$work/buckets.txt"
  fi
  step_end
fi

# ---- 7. trainer: 200 steps of examples/trainer ------------------------------------------------
steps=200 window=10 batch=48
if ((dry_run)); then
  skip_gpu trainer "would run: hetrun_trainer --steps $steps --window $window --batch $batch"
else
  step_begin trainer
  trainer=$(bin_of hetrun_trainer)
  if [[ -z $trainer ]]; then
    fail "hetrun_trainer was not built"
  else
    t0=$(date +%s.%N)
    rank_env
    run_for 150 "$work/trainer.txt" "${RANK_ENV[@]}" "$trainer" --steps $steps --window $window \
      --batch $batch --summary "$work/trainer.summary" || fail "hetrun_trainer failed"
    fig trainer wall_s "$("$python" -c "import time; print(round(time.time() - $t0, 2))")"
    if [[ -f $work/trainer.summary ]]; then
      cat "$work/trainer.summary"
      figs_from trainer "$work/trainer.summary"
      "$python" - "$work/trainer.summary" "$batch" "$window" "${gather_us:-}" >"$work/tr.txt" <<'EOF'
import sys
kv = dict(l.strip().split("=", 1) for l in open(sys.argv[1]) if "=" in l)
batch, window, gather = float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rate = float(kv["samples_per_s"])
step_ms = 1000 * batch / rate if rate > 0 else 0
print(f"step_ms={step_ms:.3f}")
print(f"loss_decreased={int(float(kv['loss_last']) < float(kv['loss_first']))}")
print(f"tuner_overhead_pct={100 * float(kv['tuner_overhead']):.4f}")
if gather and step_ms > 0:
    # One all-gather per window, timed with CUDA events (nccl step), spread over its steps.
    print(f"tuner_allgather_per_step_pct={100 * float(gather) / 1000 / (window * step_ms):.4f}")
EOF
      cat "$work/tr.txt"
      figs_from trainer "$work/tr.txt"
      [[ $(kv loss_decreased "$work/tr.txt") == 1 ]] || fail "the loss did not decrease"
      "$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 0.5 else 1)" \
        "$(kv tuner_overhead_pct "$work/tr.txt")" || fail "tuner overhead is not under 0.5% per step"
    else
      fail "the trainer wrote no --summary"
    fi
  fi
  step_end
fi

# ---- 8. fsdp2: hetrun.Tuner under FSDP2 on one GPU (CUDA-event intervals, mixed precision) ---
# The Python package from this tree: its extension built by CMake alone (no pip, no network:
# HETRUN_PYTHON_EXTENSION_ONLY, pybind11 from this machine), the sources from python/hetrun.
pyext=$build/python-ext
pyconf=("${cmake:-cmake}" -S "$src" -B "$pyext" -G Ninja -DCMAKE_BUILD_TYPE=Release
        -DHETRUN_PYTHON_EXTENSION_ONLY=ON -DPython_EXECUTABLE="$python")
if ((dry_run)); then
  echo "would run: ${pyconf[*]}"
  skip_gpu fsdp2 "would run: tests/gpu/fsdp2_check.py on one rank (NCCL, world size 1)"
else
  step_begin fsdp2
  stage=$work/pypkg
  mkdir -p "$stage"
  cp -r "$src/python/hetrun" "$stage/"
  if run_for 60 "$work/pyconf.txt" "${pyconf[@]}" &&
     run_for 240 "$work/pybuild.txt" "${cmake:-cmake}" --build "$pyext" -j "$jobs" --target _core; then
    cp "$(find "$pyext" -name '_core*.so' | head -1)" "$stage/hetrun/"
    rank_env
    run_for 180 "$work/fsdp2.txt" "${RANK_ENV[@]}" PYTHONPATH="$stage" "$python" \
      "$here/fsdp2_check.py" || fail "fsdp2_check failed (see log)"
    figs_from fsdp2 "$work/fsdp2.txt"
  else
    fail "the Python extension did not build (pybind11 on this machine?)"
  fi
  step_end
fi

# ---- 9. collective_check: hetrun run --check-collectives, one rank on NCCL --------------------
# The probe (python -m hetrun.collective_check) from the package staged by step 8, on this GPU:
# all-reduce and all-gather 8 B .. 8 MiB checked bit for bit over NCCL (world size 1), the links
# fragment written, then the worker starts.
if ((dry_run)); then
  skip_gpu collective_check "would run: hetrun run --nproc-per-node 1 --check-collectives --check-collectives-out FILE (NCCL, world size 1)"
else
  step_begin collective_check
  if ! ls "$work/pypkg/hetrun/"_core*.so >/dev/null 2>&1; then
    fail "no staged Python package with its extension (step fsdp2 builds it)"
  else
    links=$work/links.json
    run_for 180 "$work/cc.txt" env PYTHONPATH="$work/pypkg" "$hetrun" run --nproc-per-node 1 \
      --master-port "$(free_port)" --check-collectives --check-collectives-out "$links" \
      --python "$python" -- "$python" -c 'print("workers_started=1")'
    rc=$?
    fig collective_check exit_code "$rc"
    passed=$(grep -m1 'collective check passed' "$work/cc.txt.err")
    ((rc == 0)) || fail "hetrun run --check-collectives exited $rc"
    [[ -n $passed ]] || fail "no 'collective check passed' line"
    [[ $passed == *"on 1 ranks (nccl)"* ]] || fail "the check did not run on NCCL: $passed"
    [[ $(kv workers_started "$work/cc.txt") == 1 ]] || fail "the worker did not start after the check"
    [[ -s $links ]] || fail "no links fragment at $links"
    fig collective_check seconds "$(sed -n 's/.* in \([0-9.]*\) s;.*/\1/p' <<<"$passed")"
    [[ -s $links ]] && fig collective_check fragment "$(tr -d ' \n' <"$links")"
  fi
  step_end
fi

# ---- 10. deepspeed: ZeroBalance under DeepSpeed ZeRO-3 on one GPU (CUDA-event intervals) -----
# The package staged by step 8; DeepSpeed from this machine's python3, else from the wheels that
# tests/gpu/stage-deps.sh put in DEPS/wheels (DeepSpeed itself, built here without ops, and the
# requirements the GPU machine lacks), installed into a scratch folder with no network.
if ((dry_run)); then
  skip_gpu deepspeed "would run: tests/gpu/deepspeed_check.py on one rank (ZeRO-3, NCCL, world size 1)"
else
  step_begin deepspeed
  dspath=$work/pypkg
  if ! "$python" -c 'import deepspeed' >/dev/null 2>&1; then
    if compgen -G "${deps:-/nonexistent}/wheels/deepspeed-*.whl" >/dev/null; then
      run_for 120 "$work/dsinstall.txt" "$python" -m pip install --quiet --no-index --no-deps \
        --no-compile --target "$work/dspkgs" "$deps"/wheels/*.whl ||
        fail "installing the staged DeepSpeed wheels failed"
      dspath=$work/pypkg:$work/dspkgs
    else
      fail "no deepspeed in $python and no staged wheels (tests/gpu/stage-deps.sh DIR, carried)"
    fi
  fi
  if ! ls "$work/pypkg/hetrun/"_core*.so >/dev/null 2>&1; then
    fail "no staged Python package with its extension (step fsdp2 builds it)"
  elif [[ -z $step_fail ]]; then
    rank_env
    run_for 240 "$work/deepspeed.txt" "${RANK_ENV[@]}" PYTHONPATH="$dspath" PYTHONWARNINGS=ignore \
      "$python" "$here/deepspeed_check.py" || fail "deepspeed_check failed (see log)"
    figs_from deepspeed "$work/deepspeed.txt"
  fi
  step_end
fi

# ---- summary ---------------------------------------------------------------------------------
echo
"${checks[@]}" summary "$results" "$out/summary.json" "suite=hetrun GPU validation" \
  "dry_run=$( ((dry_run)) && echo true || echo false)" "budget_s=$budget" \
  "duration_s=$(($(date +%s) - start_epoch))" "source=$src" "build_dir=$build" \
  "log=$log" "started=$(date -u -d "@$start_epoch" +%FT%TZ)"
summary_rc=$?
ok=$("$python" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["ok"]))' "$out/summary.json" 2>/dev/null)
echo "summary: $out/summary.json  log: $log"
exec >&- 2>&-
wait "$tee_pid" 2>/dev/null
((summary_rc == 0)) && [[ $ok == 1 ]] && exit 0
exit 1
