// CUDA C++ reference: the latency of a grid barrier, cooperative groups'
// `cg::this_grid().sync()`, in a cooperative launch of as many 256-thread
// blocks as can be resident (1,056 on an H200: 132 SMs x 8).
//
// First a checking kernel: before each barrier thread 0 of every block adds
// 1 to a counter, and after it checks that every block's add of that phase
// is visible; a missing one, or a final count other than blocks x syncs,
// fails the program. Then the timed kernel, which does nothing but `syncs`
// barriers: the median of 5 timed launches (after a warm-up), divided by
// the number of barriers. Output: one CSV line on stdout,
//
//   kind,impl,blocks,threads,syncs,us_per_sync
//
// the same shape coopgraph's example 21_grid_sync prints, so the two
// compare in one run.
//
// Usage: cub_grid_sync [syncs]   (default 10,000)
#include "common.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;
using namespace cubbench;

namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock) sync_only(int syncs)
{
  cg::grid_group grid = cg::this_grid();
  for (int s = 0; s < syncs; ++s)
  {
    grid.sync();
  }
}

__global__ void __launch_bounds__(kBlock)
  sync_checked(int syncs, unsigned* count, unsigned* errors)
{
  cg::grid_group grid = cg::this_grid();
  for (int s = 0; s < syncs; ++s)
  {
    if (threadIdx.x == 0)
    {
      atomicAdd(count, 1u);
    }
    grid.sync();
    if (threadIdx.x == 0 && atomicAdd(count, 0u) < unsigned(s + 1) * gridDim.x)
    {
      atomicAdd(errors, 1u);
    }
    grid.sync();
  }
}

} // namespace

int main(int argc, char** argv)
{
  const int syncs = argc > 1 ? std::atoi(argv[1]) : 10000;
  if (syncs <= 0)
  {
    fail("usage: cub_grid_sync [syncs > 0]");
  }
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  int coop = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  if (!coop)
  {
    fail("the device cannot launch cooperative kernels");
  }
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sync_only, kBlock, 0));
  int per_sm_checked = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_checked, sync_checked, kBlock, 0));
  const int blocks = sms * std::min(per_sm, per_sm_checked);
  if (blocks <= 0)
  {
    fail("no block of %d threads can be resident", kBlock);
  }

  // Check: every block's arrival is visible after each barrier.
  DeviceBuffer<unsigned> count(1), errors(1);
  CUDA_CHECK(cudaMemset(count.get(), 0, sizeof(unsigned)));
  CUDA_CHECK(cudaMemset(errors.get(), 0, sizeof(unsigned)));
  const int checked_syncs = std::min(syncs, 1000);
  {
    int s             = checked_syncs;
    unsigned* c       = count.get();
    unsigned* e       = errors.get();
    void* args[]      = {&s, &c, &e};
    CUDA_CHECK(cudaLaunchCooperativeKernel((void*) sync_checked, blocks, kBlock, args, 0, 0));
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  unsigned got_count = 0, got_errors = 0;
  CUDA_CHECK(cudaMemcpy(&got_count, count.get(), sizeof(unsigned), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&got_errors, errors.get(), sizeof(unsigned), cudaMemcpyDeviceToHost));
  if (got_errors != 0 || got_count != unsigned(blocks) * unsigned(checked_syncs))
  {
    fail("grid barrier check: %u arrivals missed, count %u instead of %u", got_errors, got_count,
         unsigned(blocks) * unsigned(checked_syncs));
  }

  // Time.
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  int s        = syncs;
  void* args[] = {&s};
  CUDA_CHECK(cudaLaunchCooperativeKernel((void*) sync_only, blocks, kBlock, args, 0, 0));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int rep = 0; rep < 5; ++rep)
  {
    CUDA_CHECK(cudaEventRecord(start));
    CUDA_CHECK(cudaLaunchCooperativeKernel((void*) sync_only, blocks, kBlock, args, 0, 0));
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double us = double(ms[ms.size() / 2]) * 1e3 / syncs;
  std::printf("kind,impl,blocks,threads,syncs,us_per_sync\n");
  std::printf("grid_sync,cuda_cg,%d,%d,%d,%.4f\n", blocks, kBlock, syncs, us);
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return 0;
}
