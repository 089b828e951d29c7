#!/usr/bin/env bash
# Runs `hetrun simulate` on every scenario in examples/scenarios and prints one Markdown table:
# steady ratio (to the exact optimum), convergence windows and share changes for hetrun and each
# baseline, and hetrun's margin over `proportional` (its steady ratio / hetrun's, minus 1).
# Usage: bench/tuner_scenarios.sh BUILD_DIR   (a release build; bench/run.sh passes it)
set -euo pipefail
build=${1:?usage: bench/tuner_scenarios.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
hetrun="$build/bin/hetrun"
command -v jq >/dev/null || { echo "tuner_scenarios.sh needs jq" >&2; exit 1; }
echo "| scenario | hetrun | proportional | margin | lbb | uniform | static_datasheet |"
echo "|---|---|---|---|---|---|---|"
for f in "$here"/../examples/scenarios/*.json; do
  json=$("$hetrun" simulate --scenario "$f" --json)
  jq -r --arg name "$(basename "$f" .json)" '
    def r4: . * 10000 | round / 10000;
    def cell: "\(.steady_ratio | r4) / \(if .convergence_windows < 0 then "never" else .convergence_windows end) / \(.share_changes)";
    "| \($name) | \(cell) | \(.baselines.proportional | cell) | \((.baselines.proportional.steady_ratio / .steady_ratio - 1) * 1000 | round / 10)% | \(.baselines.lbb | cell) | \(.baselines.uniform | cell) | \(.baselines.static_datasheet | cell) |"' <<<"$json"
done
echo
echo "cells: steady_ratio / convergence windows (to ratio <= 1.05, from the start and each event) / share changes"
