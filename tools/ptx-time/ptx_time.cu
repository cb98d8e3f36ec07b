// Times a copy-shaped kernel from a PTX file through the driver API, for PTX edited by hand
// (a variant of what coopgraph emits, before the emitter learns it). The kernel's parameters
// must be (input pointer, output pointer, n: u32, input length: u32, output length: u32), as
// examples/bench's copy kernels with bounds checked are; it runs over 32-bit words, n / TILE
// blocks (rounded up) of BLOCK threads, checks that the output equals the input, and prints
// GB/s (bytes read plus written) from the median of 20 launches after 2 untimed ones.
//
// Build and run on the GPU machine (PTX from COOPGRAPH_DUMP_PTX=dir):
//   nvcc -O2 -o ptx_time tools/ptx-time/ptx_time.cu -lcuda
//   ./ptx_time FILE.ptx KERNEL N BLOCK TILE
// Exits 1 when any element is wrong.
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <string>
#include <fstream>
#include <sstream>
#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); fprintf(stderr, "%s: %s\n", #x, s); exit(1);} } while (0)
int main(int argc, char** argv) {
  if (argc < 6) { fprintf(stderr, "usage\n"); return 2; }
  std::ifstream f(argv[1]); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
  unsigned n = atoi(argv[3]), block = atoi(argv[4]), tile = atoi(argv[5]);
  CK(cuInit(0)); CUdevice d; CK(cuDeviceGet(&d, 0)); CUcontext c; CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  CUmodule m; CK(cuModuleLoadData(&m, ptx.c_str())); CUfunction k; CK(cuModuleGetFunction(&k, m, argv[2]));
  CUdeviceptr in, out; CK(cuMemAlloc(&in, size_t(n) * 4)); CK(cuMemAlloc(&out, size_t(n) * 4));
  std::vector<unsigned> h(n); for (unsigned i = 0; i < n; ++i) h[i] = i * 2654435761u;
  CK(cuMemcpyHtoD(in, h.data(), size_t(n) * 4)); CK(cuMemsetD32(out, 0xdeadbeef, n));
  unsigned grid = (n + tile - 1) / tile; unsigned len0 = n, len1 = n;
  void* args[] = {&in, &out, &n, &len0, &len1};
  auto launch = [&] { CK(cuLaunchKernel(k, grid, 1, 1, block, 1, 1, 0, 0, args, 0)); };
  launch(); CK(cuCtxSynchronize());
  std::vector<unsigned> o(n); CK(cuMemcpyDtoH(o.data(), out, size_t(n) * 4));
  size_t bad = 0; for (unsigned i = 0; i < n; ++i) bad += o[i] != h[i];
  CUevent a, b; CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, 0));
  launch(); launch();
  std::vector<float> ms;
  for (int r = 0; r < 20; ++r) { CK(cuEventRecord(a, 0)); launch(); CK(cuEventRecord(b, 0)); CK(cuEventSynchronize(b)); float t; CK(cuEventElapsedTime(&t, a, b)); ms.push_back(t); }
  std::sort(ms.begin(), ms.end());
  double t = ms[ms.size() / 2];
  printf("%s %s: %.0f GB/s (median %.4f ms), %zu wrong\n", argv[1], argv[2], 2.0 * n * 4 / (t * 1e6), t, bad);
  return bad != 0;
}
