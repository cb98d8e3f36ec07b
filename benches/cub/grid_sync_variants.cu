// Grid-barrier variants beside CUDA's `cg::this_grid().sync()`, in one run: what a grid
// barrier's latency depends on (coopgraph's `sync_grid()` is the "last, sleep 32" row).
//
// Every variant is CUDA's algorithm (block barrier; thread 0 adds 1, or block 0 adds
// 0x80000000 - (blocks - 1); thread 0 waits for the word's top bit to flip; block barrier) on
// a word of its own in cudaMalloc'ed memory. They differ in how thread 0 waits:
//   hand        polls with ld.acquire.gpu right behind the add (the add's result is needed
//               only by the test after the first poll returns);
//   dep         the first poll's address depends on the add's result, so polls start after
//               the add returns (as in CUDA's, whose warp-aggregated add shuffles the result);
//   sleep N     nanosleep N ns before each poll;
//   last        the add is acq_rel and the block whose add flips the bit does not poll.
// Each variant is checked first: thread 0 of every block counts its arrival before each
// barrier and after it checks that every block's arrival of that phase is visible. Then it
// runs 10,000 barriers; the figure is the median of 5 launches divided by 10,000.
//
// Output: CSV on stdout, `kind,variant,blocks,threads,syncs,us_per_sync`.
// Usage: cub_grid_sync_variants [syncs]   (default 10,000)
#include "common.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;
using namespace cubbench;

namespace {

constexpr int kBlock = 256;

enum Wait { kCg, kHand, kDep, kLast };

template <int W, int SLEEP>
__device__ void barrier(unsigned* word, unsigned zero)
{
  if (W == kCg)
  {
    cg::this_grid().sync();
    return;
  }
  __syncthreads();
  if (threadIdx.x == 0)
  {
    const unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
    unsigned old, now;
    if (W == kLast)
    {
      asm volatile("atom.add.acq_rel.gpu.u32 %0,[%1],%2;" : "=r"(old) : "l"(word), "r"(add) : "memory");
    }
    else
    {
      asm volatile("atom.add.release.gpu.u32 %0,[%1],%2;" : "=r"(old) : "l"(word), "r"(add) : "memory");
    }
    // `zero` is 0 at run time; the compiler cannot know it.
    unsigned* at = W == kDep ? word + (old & zero) : word;
    const bool poll = W != kLast || (((old + add) ^ old) & 0x80000000u) == 0;
    if (poll)
    {
      do
      {
        if (SLEEP > 0)
        {
          __nanosleep(SLEEP);
        }
        asm volatile("ld.acquire.gpu.u32 %0,[%1];" : "=r"(now) : "l"(at) : "memory");
      } while (((old ^ now) & 0x80000000u) == 0);
    }
  }
  __syncthreads();
}

template <int W, int SLEEP>
__global__ void __launch_bounds__(kBlock) timed(int syncs, unsigned* word, unsigned zero)
{
  for (int s = 0; s < syncs; ++s)
  {
    barrier<W, SLEEP>(word, zero);
  }
}

template <int W, int SLEEP>
__global__ void __launch_bounds__(kBlock)
  checked(int syncs, unsigned* word, unsigned zero, unsigned* count, unsigned* errors)
{
  for (int s = 0; s < syncs; ++s)
  {
    if (threadIdx.x == 0)
    {
      atomicAdd(count, 1u);
    }
    barrier<W, SLEEP>(word, zero);
    if (threadIdx.x == 0 && atomicAdd(count, 0u) < unsigned(s + 1) * gridDim.x)
    {
      atomicAdd(errors, 1u);
    }
    barrier<W, SLEEP>(word, zero);
  }
}

template <int W, int SLEEP>
void run(const char* name, int blocks, int syncs)
{
  DeviceBuffer<unsigned> word(1), count(1), errors(1);
  CUDA_CHECK(cudaMemset(word.get(), 0, 4));
  CUDA_CHECK(cudaMemset(count.get(), 0, 4));
  CUDA_CHECK(cudaMemset(errors.get(), 0, 4));
  unsigned zero = 0;
  unsigned* w   = word.get();
  unsigned* c   = count.get();
  unsigned* e   = errors.get();
  int checks    = 200;
  void* cargs[] = {&checks, &w, &zero, &c, &e};
  CUDA_CHECK(cudaLaunchCooperativeKernel((void*) checked<W, SLEEP>, blocks, kBlock, cargs, 0, 0));
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  unsigned got_count = 0, got_errors = 0;
  CUDA_CHECK(cudaMemcpy(&got_count, c, 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&got_errors, e, 4, cudaMemcpyDeviceToHost));
  if (got_errors != 0 || got_count != unsigned(blocks) * unsigned(checks))
  {
    fail("%s over %d blocks: %u arrivals missed, count %u", name, blocks, got_errors, got_count);
  }
  void* args[] = {&syncs, &w, &zero};
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaLaunchCooperativeKernel((void*) timed<W, SLEEP>, blocks, kBlock, args, 0, 0));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int rep = 0; rep < 5; ++rep)
  {
    CUDA_CHECK(cudaEventRecord(start));
    CUDA_CHECK(cudaLaunchCooperativeKernel((void*) timed<W, SLEEP>, blocks, kBlock, args, 0, 0));
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("grid_sync,%s,%d,%d,%d,%.4f\n", name, blocks, kBlock, syncs, double(ms[2]) * 1e3 / syncs);
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
}

} // namespace

int main(int argc, char** argv)
{
  const int syncs = argc > 1 ? std::atoi(argv[1]) : 10000;
  if (syncs <= 0)
  {
    fail("usage: cub_grid_sync_variants [syncs > 0]");
  }
  int sms = 0, per_sm = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, checked<kCg, 0>, kBlock, 0));
  const int most = sms * per_sm;
  std::printf("kind,variant,blocks,threads,syncs,us_per_sync\n");
  for (int blocks : {most, most / 2, 2 * sms, sms})
  {
    run<kCg, 0>("cuda_cg", blocks, syncs);
    run<kHand, 0>("hand", blocks, syncs);
    run<kDep, 0>("dep", blocks, syncs);
    run<kDep, 32>("dep_sleep32", blocks, syncs);
    run<kDep, 128>("dep_sleep128", blocks, syncs);
    run<kLast, 0>("last", blocks, syncs);
    run<kLast, 16>("last_sleep16", blocks, syncs);
    run<kLast, 32>("last_sleep32", blocks, syncs);
    run<kLast, 64>("last_sleep64", blocks, syncs);
  }
  return 0;
}
