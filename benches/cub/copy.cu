// CUB reference: tile copy through cub::BlockLoad + cub::BlockStore.
//
// For every (dtype, block size, items per thread, load/store algorithm) the
// kernel copies n elements: block b owns the tile starting at b*BLOCK*ITEMS,
// loads it with BlockLoad<ALGO> and stores it with the matching
// BlockStore<ALGO>. A device-to-device cudaMemcpyAsync row gives the
// practical bandwidth ceiling. Output: CSV on stdout (see README.md).
//
// Usage: cub_copy [n]   (default n = 2^28 elements)
#include "common.cuh"

#include <iterator>
#include <tuple>

using namespace cubbench;

namespace {

struct CopyAlgorithm
{
  cub::BlockLoadAlgorithm load;
  cub::BlockStoreAlgorithm store;
  const char* name;
};

// Each load algorithm paired with the store algorithm of the same name.
constexpr CopyAlgorithm kAlgorithms[] = {
  {cub::BLOCK_LOAD_DIRECT, cub::BLOCK_STORE_DIRECT, "direct"},
  {cub::BLOCK_LOAD_STRIPED, cub::BLOCK_STORE_STRIPED, "striped"},
  {cub::BLOCK_LOAD_VECTORIZE, cub::BLOCK_STORE_VECTORIZE, "vectorize"},
  {cub::BLOCK_LOAD_TRANSPOSE, cub::BLOCK_STORE_TRANSPOSE, "transpose"},
  {cub::BLOCK_LOAD_WARP_TRANSPOSE, cub::BLOCK_STORE_WARP_TRANSPOSE, "warp_transpose"},
  {cub::BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED,
   cub::BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED,
   "warp_transpose_timesliced"},
};
constexpr int kBlockSizes[]     = {128, 256};
constexpr int kItemsPerThread[] = {1, 4, 8, 16};
using DTypes                    = std::tuple<float, int>;

// Distinct seeds per dtype so the two runs do not copy identical bit patterns.
constexpr std::uint64_t kSeed[] = {0xC0B1, 0xC0B2};

template <typename T, int BLOCK, int ITEMS, cub::BlockLoadAlgorithm LOAD_ALGO, cub::BlockStoreAlgorithm STORE_ALGO>
__global__ void __launch_bounds__(BLOCK) copy_kernel(const T* __restrict__ in, T* __restrict__ out, std::size_t n)
{
  using BlockLoadT  = cub::BlockLoad<T, BLOCK, ITEMS, LOAD_ALGO>;
  using BlockStoreT = cub::BlockStore<T, BLOCK, ITEMS, STORE_ALGO>;
  // Load and store never need their scratch at the same time, so they share
  // it (the pattern CUB's documentation uses); this keeps shared memory per
  // block, and therefore occupancy, the same as either primitive alone.
  union SharedStorage
  {
    typename BlockLoadT::TempStorage load;
    typename BlockStoreT::TempStorage store;
  };
  __shared__ SharedStorage smem;

  constexpr std::size_t kTile = std::size_t(BLOCK) * ITEMS;
  // Ordered against the store's use of the same bytes only where the load
  // actually staged data in shared memory (transpose variants).
  constexpr bool kBarrier = uses_shared_memory(LOAD_ALGO);

  const std::size_t tile_offset = std::size_t(blockIdx.x) * kTile;
  T items[ITEMS];
  if (tile_offset + kTile <= n)
  {
    // Full tile: unguarded path (the one that matters for bandwidth).
    BlockLoadT(smem.load).Load(in + tile_offset, items);
    if constexpr (kBarrier)
    {
      __syncthreads();
    }
    BlockStoreT(smem.store).Store(out + tile_offset, items);
  }
  else
  {
    // Last, partial tile. The out-of-bounds default keeps every item
    // initialised (a transposing store moves all of them through shared
    // memory); only the first `valid` are written back.
    const int valid = static_cast<int>(n - tile_offset);
    BlockLoadT(smem.load).Load(in + tile_offset, items, valid, T{});
    if constexpr (kBarrier)
    {
      __syncthreads();
    }
    BlockStoreT(smem.store).Store(out + tile_offset, items, valid);
  }
}

template <typename T, int BLOCK, int ITEMS, std::size_t ALGO>
void bench_copy(const DeviceBuffer<T>& in, DeviceBuffer<T>& out, DeviceComparer& comparer)
{
  constexpr CopyAlgorithm algo = kAlgorithms[ALGO];
  constexpr std::size_t tile   = std::size_t(BLOCK) * ITEMS;
  const std::size_t n          = in.size();
  const unsigned grid          = static_cast<unsigned>((n + tile - 1) / tile);

  auto launch = [&] {
    copy_kernel<T, BLOCK, ITEMS, algo.load, algo.store><<<grid, BLOCK>>>(in.get(), out.get(), n);
  };

  // Validate before timing: every element must come back bit-identical.
  out.poison();
  launch();
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  const Mismatches bad = comparer.compare(out.get(), in.get(), n);
  if (bad.count != 0)
  {
    fail("copy %s %s block=%d items=%d: %llu of %zu elements wrong, first at index %llu",
         dtype_name<T>(),
         algo.name,
         BLOCK,
         ITEMS,
         bad.count,
         n,
         bad.first_index);
  }

  const double ms = median_ms(launch);
  print_csv_row("copy", dtype_name<T>(), algo.name, BLOCK, ITEMS, gbps(2.0 * double(n) * sizeof(T), ms));
}

// The bandwidth ceiling: the driver's own device-to-device copy of the same
// bytes, validated and timed exactly like the kernels.
template <typename T>
void bench_memcpy(const DeviceBuffer<T>& in, DeviceBuffer<T>& out, DeviceComparer& comparer)
{
  auto launch = [&] {
    CUDA_CHECK(cudaMemcpyAsync(out.get(), in.get(), in.bytes(), cudaMemcpyDeviceToDevice, 0));
  };
  out.poison();
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());
  const Mismatches bad = comparer.compare(out.get(), in.get(), in.size());
  if (bad.count != 0)
  {
    fail("memcpy %s: %llu elements wrong, first at index %llu", dtype_name<T>(), bad.count, bad.first_index);
  }
  const double ms = median_ms(launch);
  print_csv_row("memcpy", dtype_name<T>(), "memcpy", 0, 0, gbps(2.0 * double(in.bytes()), ms));
}

} // namespace

int main(int argc, char** argv)
{
  const std::size_t n = parse_n(argc, argv);
  print_device_info(n);
  print_csv_header();

  DeviceComparer comparer;
  static_for<std::tuple_size<DTypes>::value>([&](auto type_index) {
    constexpr std::size_t TI = decltype(type_index)::value;
    using T                  = std::tuple_element_t<TI, DTypes>;

    DeviceBuffer<T> in(n);
    DeviceBuffer<T> out(n);
    // int inputs span [0, INT_MAX]: full-width bit patterns, never -1.
    fill_pattern(in, kSeed[TI], 0x7FFFFFFF);

    bench_memcpy(in, out, comparer);
    static_for<std::size(kBlockSizes)>([&](auto block_index) {
      constexpr int BLOCK = kBlockSizes[decltype(block_index)::value];
      static_for<std::size(kItemsPerThread)>([&](auto items_index) {
        constexpr int ITEMS = kItemsPerThread[decltype(items_index)::value];
        static_for<std::size(kAlgorithms)>([&](auto algo_index) {
          bench_copy<T, BLOCK, ITEMS, decltype(algo_index)::value>(in, out, comparer);
        });
      });
    });
  });
  return EXIT_SUCCESS;
}
