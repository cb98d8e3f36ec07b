// Times PTX copy kernels (x, y, n, len_x, len_y) over 2^28 f32, interleaved, median of 20.
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <string>
#include <fstream>
#include <sstream>
#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); printf("%s: %s\n", #x, s); exit(1);} } while (0)
int main(int argc, char** argv) {
  CK(cuInit(0)); CUdevice d; CK(cuDeviceGet(&d, 0)); CUcontext c; CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  unsigned n = 1u << 28;
  CUdeviceptr x, y; CK(cuMemAlloc(&x, 4ull * n)); CK(cuMemAlloc(&y, 4ull * n)); CK(cuMemsetD32(x, 7, n));
  int k = argc - 1; std::vector<CUfunction> f(k);
  for (int i = 0; i < k; i++) {
    std::ifstream in(argv[i + 1]); std::stringstream ss; ss << in.rdbuf(); std::string p = ss.str();
    CUmodule m; CK(cuModuleLoadData(&m, p.c_str())); CK(cuModuleGetFunction(&f[i], m, "c"));
  }
  CUevent a, b; CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, 0));
  void* args[] = {&x, &y, &n, &n, &n};
  std::vector<std::vector<float>> t(k);
  for (int rep = 0; rep < 3; rep++)
  for (int i = 0; i < k; i++) {
    for (int w = 0; w < 2; w++) CK(cuLaunchKernel(f[i], n / 256, 1, 1, 256, 1, 1, 0, 0, args, 0));
    for (int r = 0; r < 20; r++) {
      CK(cuEventRecord(a, 0)); CK(cuLaunchKernel(f[i], n / 256, 1, 1, 256, 1, 1, 0, 0, args, 0)); CK(cuEventRecord(b, 0));
      CK(cuEventSynchronize(b)); float ms; CK(cuEventElapsedTime(&ms, a, b)); t[i].push_back(ms);
    }
  }
  for (int i = 0; i < k; i++) { auto v = t[i]; std::sort(v.begin(), v.end()); float med = v[v.size() / 2];
    printf("%-12s median %.4f ms  %.0f GB/s  (%.2f%% of first)\n", argv[i + 1], med, 8.0 * n / med / 1e6, 100.0 * ([&]{auto u=t[0]; std::sort(u.begin(),u.end()); return u[u.size()/2];}()) / med); }
}
