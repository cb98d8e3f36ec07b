// CUB reference: block-level reduce and scan, plus the device-wide versions.
//
//   reduce        each block sums its tile with cub::BlockReduce<ALGO> and
//                 writes one partial per block
//   scan          each block inclusive-sum-scans its tile independently with
//                 cub::BlockScan<ALGO> (no cross-block prefix)
//   device_scan   cub::DeviceScan::InclusiveSum over all n elements
//   device_reduce cub::DeviceReduce::Sum over all n elements
//
// Every configuration is validated against a host reference before it is
// timed. Output: CSV on stdout (see README.md).
//
// Usage: cub_reduce_scan [n]   (default n = 2^28 elements)
#include "common.cuh"

#include <iterator>
#include <tuple>

using namespace cubbench;

namespace {

struct ReduceAlgorithm
{
  cub::BlockReduceAlgorithm algo;
  const char* name;
};
constexpr ReduceAlgorithm kReduceAlgorithms[] = {
  {cub::BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, "raking_commutative_only"},
  {cub::BLOCK_REDUCE_RAKING, "raking"},
  {cub::BLOCK_REDUCE_WARP_REDUCTIONS, "warp_reductions"},
};

struct ScanAlgorithm
{
  cub::BlockScanAlgorithm algo;
  const char* name;
};
constexpr ScanAlgorithm kScanAlgorithms[] = {
  {cub::BLOCK_SCAN_RAKING, "raking"},
  {cub::BLOCK_SCAN_RAKING_MEMOIZE, "raking_memoize"},
  {cub::BLOCK_SCAN_WARP_SCANS, "warp_scans"},
};

constexpr int kBlockSizes[]     = {128, 256};
constexpr int kItemsPerThread[] = {1, 4, 8, 16};
using DTypes                    = std::tuple<float, int>;

// Integer input ranges. Block-level checks: a tile sum is at most
// 4096 * 99, exact everywhere. Device-wide checks: n * 3 < 2^31 for every
// allowed n, so the int32 results never overflow (signed overflow would be
// undefined behaviour, and the reference would have to model wrapping).
constexpr int kBlockIntMax  = 99;
constexpr int kDeviceIntMax = 3;

// Float tolerances (relative; see close_enough). Block-level sums of at most
// 4096 values in [0, 1) lose far less than 1e-4. DeviceScan carries a float
// running prefix across ~10^5 tiles, each addition rounding at the prefix's
// magnitude, so its late positions legitimately drift by ~1e-5 and we allow
// 1e-3; DeviceReduce sums as a tree and keeps 1e-4.
constexpr double kBlockRelTol        = 1e-4;
constexpr double kDeviceScanRelTol   = 1e-3;
constexpr double kDeviceReduceRelTol = 1e-4;

// Block reduction reference granularity: the smallest tile (128 threads x 1
// item). Every tile size is a multiple of it, so per-tile reference sums are
// sums of these (exact in double for our inputs).
constexpr std::size_t kBaseTile = 128;

// Host accumulator type: exact for int inputs, exact-or-near for float.
template <typename T>
using Acc = std::conditional_t<std::is_integral<T>::value, long long, double>;

template <typename T, int BLOCK, int ITEMS, cub::BlockReduceAlgorithm ALGO>
__global__ void __launch_bounds__(BLOCK) reduce_kernel(const T* __restrict__ in, T* __restrict__ partials, std::size_t n)
{
  // Striped load: consecutive threads read consecutive addresses (coalesced
  // without any shared-memory exchange), and a commutative sum does not care
  // which thread holds which item.
  constexpr cub::BlockLoadAlgorithm kLoadAlgo = cub::BLOCK_LOAD_STRIPED;
  using BlockLoadT                            = cub::BlockLoad<T, BLOCK, ITEMS, kLoadAlgo>;
  using BlockReduceT                          = cub::BlockReduce<T, BLOCK, ALGO>;
  union SharedStorage
  {
    typename BlockLoadT::TempStorage load;
    typename BlockReduceT::TempStorage reduce;
  };
  __shared__ SharedStorage smem;

  constexpr std::size_t kTile   = std::size_t(BLOCK) * ITEMS;
  const std::size_t tile_offset = std::size_t(blockIdx.x) * kTile;
  T items[ITEMS];
  if (tile_offset + kTile <= n)
  {
    BlockLoadT(smem.load).Load(in + tile_offset, items);
  }
  else
  {
    // Padding with 0, the identity of +, lets the partial tile use the same
    // full-array Sum as the others.
    BlockLoadT(smem.load).Load(in + tile_offset, items, static_cast<int>(n - tile_offset), T{});
  }
  if constexpr (uses_shared_memory(kLoadAlgo))
  {
    __syncthreads(); // the reduction reuses the load's scratch
  }
  const T sum = BlockReduceT(smem.reduce).Sum(items);
  if (threadIdx.x == 0)
  {
    partials[blockIdx.x] = sum; // only thread 0 holds the block's result
  }
}

template <typename T, int BLOCK, int ITEMS, cub::BlockScanAlgorithm ALGO>
__global__ void __launch_bounds__(BLOCK) scan_kernel(const T* __restrict__ in, T* __restrict__ out, std::size_t n)
{
  // A scan needs each thread's items consecutive (blocked arrangement);
  // warp-transposed load/store give that with coalesced global accesses.
  using BlockLoadT  = cub::BlockLoad<T, BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using BlockScanT  = cub::BlockScan<T, BLOCK, ALGO>;
  using BlockStoreT = cub::BlockStore<T, BLOCK, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  union SharedStorage
  {
    typename BlockLoadT::TempStorage load;
    typename BlockScanT::TempStorage scan;
    typename BlockStoreT::TempStorage store;
  };
  __shared__ SharedStorage smem;

  constexpr std::size_t kTile   = std::size_t(BLOCK) * ITEMS;
  const std::size_t tile_offset = std::size_t(blockIdx.x) * kTile;
  const bool full               = tile_offset + kTile <= n;
  const int valid               = full ? static_cast<int>(kTile) : static_cast<int>(n - tile_offset);

  T items[ITEMS];
  if (full)
  {
    BlockLoadT(smem.load).Load(in + tile_offset, items);
  }
  else
  {
    // Zero padding sits after the valid items, so it cannot change them.
    BlockLoadT(smem.load).Load(in + tile_offset, items, valid, T{});
  }
  __syncthreads(); // all three phases share one scratch area
  BlockScanT(smem.scan).InclusiveSum(items, items);
  __syncthreads();
  if (full)
  {
    BlockStoreT(smem.store).Store(out + tile_offset, items);
  }
  else
  {
    BlockStoreT(smem.store).Store(out + tile_offset, items, valid);
  }
}

// Host data shared by all configurations of one dtype.
template <typename T>
struct Workspace
{
  explicit Workspace(std::size_t n)
      : in(n)
      , out(n)
      , partials((n + kBaseTile - 1) / kBaseTile)
      , host_in(n)
      , host_out(n)
  {}

  // Regenerates the device input and mirrors it on the host.
  void make_input(std::uint64_t seed, int int_max)
  {
    fill_pattern(in, seed, int_max);
    download(host_in.get(), in, in.size());
  }

  DeviceBuffer<T> in;
  DeviceBuffer<T> out;
  DeviceBuffer<T> partials; // one per block; sized for the smallest tile
  PinnedBuffer<T> host_in;
  PinnedBuffer<T> host_out;
  std::vector<double> base_sums; // reference sums of kBaseTile-element tiles
};

template <typename T, int BLOCK, int ITEMS, std::size_t ALGO>
void bench_block_reduce(Workspace<T>& ws)
{
  constexpr ReduceAlgorithm algo = kReduceAlgorithms[ALGO];
  constexpr std::size_t tile     = std::size_t(BLOCK) * ITEMS;
  static_assert(tile % kBaseTile == 0, "reference sums assume tiles of whole base tiles");
  const std::size_t n     = ws.in.size();
  const std::size_t tiles = (n + tile - 1) / tile;

  auto launch = [&] {
    reduce_kernel<T, BLOCK, ITEMS, algo.algo>
      <<<static_cast<unsigned>(tiles), BLOCK>>>(ws.in.get(), ws.partials.get(), n);
  };

  ws.partials.poison();
  launch();
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  download(ws.host_out.get(), ws.partials, tiles);
  // Each partial against its own tile's reference sum (stronger than
  // comparing only the grand total).
  constexpr std::size_t per_tile = tile / kBaseTile;
  for (std::size_t t = 0; t < tiles; ++t)
  {
    const std::size_t end = std::min((t + 1) * per_tile, ws.base_sums.size());
    double ref            = 0.0;
    for (std::size_t b = t * per_tile; b < end; ++b)
    {
      ref += ws.base_sums[b];
    }
    if (!close_enough(ws.host_out[t], ref, kBlockRelTol))
    {
      fail("reduce %s %s block=%d items=%d: partial %zu is %.9g, expected %.9g",
           dtype_name<T>(),
           algo.name,
           BLOCK,
           ITEMS,
           t,
           double(ws.host_out[t]),
           ref);
    }
  }

  const double ms    = median_ms(launch);
  const double bytes = double(n) * sizeof(T) + double(tiles) * sizeof(T);
  print_csv_row("reduce", dtype_name<T>(), algo.name, BLOCK, ITEMS, gbps(bytes, ms));
}

template <typename T, int BLOCK, int ITEMS, std::size_t ALGO>
void bench_block_scan(Workspace<T>& ws)
{
  constexpr ScanAlgorithm algo = kScanAlgorithms[ALGO];
  constexpr std::size_t tile   = std::size_t(BLOCK) * ITEMS;
  const std::size_t n          = ws.in.size();
  const std::size_t tiles      = (n + tile - 1) / tile;

  auto launch = [&] {
    scan_kernel<T, BLOCK, ITEMS, algo.algo><<<static_cast<unsigned>(tiles), BLOCK>>>(ws.in.get(), ws.out.get(), n);
  };

  ws.out.poison();
  launch();
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  download(ws.host_out.get(), ws.out, n);
  // Host tile-wise inclusive scan, compared element by element.
  for (std::size_t start = 0; start < n; start += tile)
  {
    const std::size_t end = std::min(start + tile, n);
    Acc<T> acc            = 0;
    for (std::size_t i = start; i < end; ++i)
    {
      acc += ws.host_in[i];
      if (!close_enough(ws.host_out[i], double(acc), kBlockRelTol))
      {
        fail("scan %s %s block=%d items=%d: element %zu is %.9g, expected %.9g",
             dtype_name<T>(),
             algo.name,
             BLOCK,
             ITEMS,
             i,
             double(ws.host_out[i]),
             double(acc));
      }
    }
  }

  const double ms = median_ms(launch);
  print_csv_row("scan", dtype_name<T>(), algo.name, BLOCK, ITEMS, gbps(2.0 * double(n) * sizeof(T), ms));
}

template <typename T>
void bench_device_scan(Workspace<T>& ws)
{
  const std::size_t n = ws.in.size();
  // int item count: CUB's usual 32-bit offset path (n <= kMaxN < 2^31).
  const int num_items = static_cast<int>(n);
  std::size_t temp_bytes = 0;
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, ws.in.get(), ws.out.get(), num_items));
  DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));

  auto launch = [&] {
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.get(), temp_bytes, ws.in.get(), ws.out.get(), num_items));
  };

  ws.out.poison();
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());
  download(ws.host_out.get(), ws.out, n);
  Acc<T> acc = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    acc += ws.host_in[i];
    if (!close_enough(ws.host_out[i], double(acc), kDeviceScanRelTol))
    {
      fail("device_scan %s: element %zu is %.9g, expected %.9g", dtype_name<T>(), i, double(ws.host_out[i]), double(acc));
    }
  }

  const double ms = median_ms(launch);
  print_csv_row("device_scan", dtype_name<T>(), "inclusive_sum", 0, 0, gbps(2.0 * double(n) * sizeof(T), ms));
}

template <typename T>
void bench_device_reduce(Workspace<T>& ws)
{
  const std::size_t n = ws.in.size();
  const int num_items = static_cast<int>(n);
  // The result goes to partials[0]: any device allocation of >= 1 element.
  std::size_t temp_bytes = 0;
  CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, ws.in.get(), ws.partials.get(), num_items));
  DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));

  auto launch = [&] {
    CUDA_CHECK(cub::DeviceReduce::Sum(temp.get(), temp_bytes, ws.in.get(), ws.partials.get(), num_items));
  };

  ws.partials.poison();
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());
  T result{};
  CUDA_CHECK(cudaMemcpy(&result, ws.partials.get(), sizeof(T), cudaMemcpyDeviceToHost));
  Acc<T> ref = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    ref += ws.host_in[i];
  }
  if (!close_enough(result, double(ref), kDeviceReduceRelTol))
  {
    fail("device_reduce %s: sum is %.9g, expected %.9g", dtype_name<T>(), double(result), double(ref));
  }

  const double ms = median_ms(launch);
  print_csv_row("device_reduce", dtype_name<T>(), "sum", 0, 0, gbps(double(n) * sizeof(T), ms));
}

// Runs `bench<T, BLOCK, ITEMS, ALGO>` for every block size, item count and
// algorithm index in [0, NUM_ALGOS).
template <std::size_t NUM_ALGOS, typename Bench>
void for_each_block_config(Bench&& bench)
{
  static_for<std::size(kBlockSizes)>([&](auto block_index) {
    constexpr int BLOCK = kBlockSizes[decltype(block_index)::value];
    static_for<std::size(kItemsPerThread)>([&](auto items_index) {
      constexpr int ITEMS = kItemsPerThread[decltype(items_index)::value];
      static_for<NUM_ALGOS>([&](auto algo_index) {
        bench(std::integral_constant<int, BLOCK>{},
              std::integral_constant<int, ITEMS>{},
              std::integral_constant<std::size_t, decltype(algo_index)::value>{});
      });
    });
  });
}

} // namespace

int main(int argc, char** argv)
{
  const std::size_t n = parse_n(argc, argv);
  print_device_info(n);
  print_csv_header();

  static_for<std::tuple_size<DTypes>::value>([&](auto type_index) {
    constexpr std::size_t TI = decltype(type_index)::value;
    using T                  = std::tuple_element_t<TI, DTypes>;
    Workspace<T> ws(n);

    // Block-level kinds.
    ws.make_input(0x5EED0 + TI, kBlockIntMax);
    ws.base_sums.assign(ws.partials.size(), 0.0);
    for (std::size_t i = 0; i < n; ++i)
    {
      ws.base_sums[i / kBaseTile] += double(ws.host_in[i]);
    }
    for_each_block_config<std::size(kReduceAlgorithms)>([&](auto block, auto items, auto algo) {
      bench_block_reduce<T, decltype(block)::value, decltype(items)::value, decltype(algo)::value>(ws);
    });
    for_each_block_config<std::size(kScanAlgorithms)>([&](auto block, auto items, auto algo) {
      bench_block_scan<T, decltype(block)::value, decltype(items)::value, decltype(algo)::value>(ws);
    });

    // Device-wide kinds, on a smaller integer range (see kDeviceIntMax).
    ws.make_input(0xDE5EED0 + TI, kDeviceIntMax);
    bench_device_scan(ws);
    bench_device_reduce(ws);
  });
  return EXIT_SUCCESS;
}
