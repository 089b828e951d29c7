# Sourced by the engine comparisons (fsdp_compare.sh, deepspeed_compare.sh): one training run under
# `hetrun run` on a free port, and a figure read back from its summary. The caller sets `label`
# (its name in messages), `py`, `hetrun` and `work` (a scratch folder) before calling them.

# get NAME KEY: the value of KEY=... in run NAME's summary.
get() { sed -n "s/^$2=//p" "$work/$1"; }

# train NAME NPROC ARGS...: one run, its summary in $work/NAME and its output in $work/NAME.log;
# a failed run prints the log's tail and ends the benchmark.
train() {
  local name=$1 nproc=$2
  shift 2
  local port
  port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$hetrun" run --nproc-per-node "$nproc" --master-port "$port" "$@" --summary "$work/$name" \
    > "$work/$name.log" 2>&1 ||
    { echo "$label: $name failed:"; tail -30 "$work/$name.log"; exit 1; }
}
