#!/usr/bin/env bash
# Runs `hetrun simulate` on every scenario in examples/scenarios and prints one Markdown table:
# steady ratio (to the exact optimum) and convergence windows for hetrun and each baseline.
# Usage: bench/tuner_scenarios.sh BUILD_DIR   (a release build; bench/run.sh passes it)
set -euo pipefail
build=${1:?usage: bench/tuner_scenarios.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
hetrun="$build/bin/hetrun"
command -v jq >/dev/null || { echo "tuner_scenarios.sh needs jq" >&2; exit 1; }
echo "| scenario | hetrun | uniform | static_datasheet | lbbsp |"
echo "|---|---|---|---|---|"
for f in "$here"/../examples/scenarios/*.json; do
  json=$("$hetrun" simulate --scenario "$f" --json)
  jq -r --arg name "$(basename "$f" .json)" '
    def cell: "\(.steady_ratio * 10000 | round / 10000) / \(if .convergence_windows < 0 then "never" else .convergence_windows end)";
    "| \($name) | \(cell) | \(.baselines.uniform | cell) | \(.baselines.static_datasheet | cell) | \(.baselines.lbbsp | cell) |"' <<<"$json"
done
echo
echo "cells: steady_ratio / convergence windows (to ratio <= 1.05, from the start and each event)"
