// The smoke stage's self-test (docker/Dockerfile, SMOKE_SELFTEST_SM90_ONLY=1): an extension built
// the way TORCH_CUDA_ARCH_LIST=9.0 builds one, sm_90 SASS and no PTX, which an A100 cannot run.
// The smoke stage must fail on it with hetrun check's exit 80.
__global__ void hetrun_selftest_scale(float* x, float k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= k;
}

extern "C" void hetrun_selftest_launch(float* x, float k, int n) {
  hetrun_selftest_scale<<<(n + 255) / 256, 256>>>(x, k, n);
}
