#!/usr/bin/env bash
# docker/image/cuda-match.sh with this machine's real nvcc and torch: a CUDA_VERSION of another
# release (12.8.1, the old base) is refused, naming all three versions; the release of nvcc itself
# is accepted exactly when torch was built for it.
#   cuda_match_test.sh SOURCE_DIR NVCC PYTHON
set -uo pipefail
check=$1/docker/image/cuda-match.sh nvcc=$2 python=$3
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

out=$("$check" 12.8.1 "$nvcc" "$python" 2>&1)
rc=$?
printf '%s\n' "$out"
((rc == 1)) || fail "CUDA_VERSION 12.8.1 against nvcc and torch of CUDA 13: exit $rc, not 1"
[[ $out == *"CUDA mismatch: CUDA_VERSION 12.8.1 (12.8), nvcc "*", torch.version.cuda "* ]] ||
  fail "the refusal does not name the three versions"

nvcc_release=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
torch_cuda=$("$python" -c 'import torch; print(torch.version.cuda)')
out=$("$check" "$nvcc_release.0" "$nvcc" "$python" 2>&1)
rc=$?
printf '%s\n' "$out"
if [[ $nvcc_release == "$torch_cuda" ]]; then
  ((rc == 0)) || fail "nvcc $nvcc_release and torch $torch_cuda agree, yet exit $rc"
else
  ((rc == 1)) || fail "nvcc $nvcc_release and torch $torch_cuda differ, yet exit $rc"
fi
printf 'PASS\n'
