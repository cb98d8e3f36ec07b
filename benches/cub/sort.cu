// CUB reference: block radix sort of one tile per block.
//
//   block_radix_sort_keys    each block loads its tile of keys (blocked, through
//                            BLOCK_LOAD_WARP_TRANSPOSE), sorts it with
//                            cub::BlockRadixSort<K, BLOCK, ITEMS>::SortBlockedToStriped
//                            (4-bit digits, CUB's default, over every key bit) and
//                            stores it striped (coalesced, no exchange)
//   block_radix_sort_pairs   the same with a u32 value beside each key
//
// Keys u32, i32, f32 (random bits: NaNs and infinities included, sorted by
// CUB's bit order) and u64; blocks of 128 and 256 threads; 4, 8 and 16 items
// per thread. Every configuration is checked before it is timed: every 97th
// tile against a stable host sort of the keys' bit-ordered form (the values,
// each its key's position in the tile, show stability too), and every tile
// for being sorted. gbps counts the bytes of keys (and values) read and
// written: 2 * n * (sizeof(K) [+ 4]).
//
//   block_histogram          each block loads its tile of u8 samples (blocked,
//                            BLOCK_LOAD_DIRECT), counts them into 256 shared u32
//                            bins with cub::BlockHistogram<u8, BLOCK, ITEMS, 256, ALG>
//                            (ALG: BLOCK_HISTO_ATOMIC "atomic", BLOCK_HISTO_SORT
//                            "sort") and writes its 256 counters to
//                            hist[block * 256 ..]; blocks of 128 and 256 threads, 4,
//                            8 and 16 items. Checked before timing: every block's
//                            counters sum to its tile, every 97th block's against a
//                            host count. gbps counts the samples read: n bytes.
//
// Output: CSV on stdout (see README.md). Example 24 (`examples/24_radix_sort.rs`)
// runs the same sort configurations and prints its figures beside these;
// example 25 (`examples/25_block_histogram.rs`) the histogram ones.
//
// Usage: cub_sort [n]   (default n = 2^28 keys, rounded down to whole 4096-key tiles)
#include "sort_common.cuh"

#include <algorithm>
#include <numeric>
#include <tuple>

using namespace cubbench;

namespace {

constexpr int kBlockSizes[]     = {128, 256};
constexpr int kItemsPerThread[] = {4, 8, 16};
constexpr std::size_t kMaxTile  = 256 * 16;
constexpr std::size_t kCheckEvery = 97;
using KeyTypes = std::tuple<std::uint32_t, int, float, std::uint64_t>;

template <typename K, int BLOCK, int ITEMS, bool PAIRS>
__global__ void __launch_bounds__(BLOCK)
  sort_kernel(const K* __restrict__ keys_in, K* __restrict__ keys_out, const std::uint32_t* __restrict__ values_in, std::uint32_t* __restrict__ values_out)
{
  using V          = std::uint32_t;
  using LoadKeys   = cub::BlockLoad<K, BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using LoadValues = cub::BlockLoad<V, BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Sort       = cub::BlockRadixSort<K, BLOCK, ITEMS, std::conditional_t<PAIRS, V, cub::NullType>>;
  union SharedStorage
  {
    typename LoadKeys::TempStorage load_keys;
    typename LoadValues::TempStorage load_values;
    typename Sort::TempStorage sort;
  };
  __shared__ SharedStorage smem;

  constexpr std::size_t kTile   = std::size_t(BLOCK) * ITEMS;
  const std::size_t tile_offset = std::size_t(blockIdx.x) * kTile;
  K keys[ITEMS];
  LoadKeys(smem.load_keys).Load(keys_in + tile_offset, keys);
  __syncthreads(); // the sort reuses the load's scratch
  if constexpr (PAIRS)
  {
    V values[ITEMS];
    LoadValues(smem.load_values).Load(values_in + tile_offset, values);
    __syncthreads();
    Sort(smem.sort).SortBlockedToStriped(keys, values);
    cub::StoreDirectStriped<BLOCK>(threadIdx.x, values_out + tile_offset, values);
  }
  else
  {
    Sort(smem.sort).SortBlockedToStriped(keys);
  }
  cub::StoreDirectStriped<BLOCK>(threadIdx.x, keys_out + tile_offset, keys);
}

template <typename K, int BLOCK, int ITEMS, bool PAIRS>
void bench_sort(Workspace<K>& ws, std::uint64_t seed)
{
  constexpr std::size_t tile = std::size_t(BLOCK) * ITEMS;
  const std::size_t n        = ws.keys_in.size();
  const std::size_t tiles    = n / tile;
  const char* kind           = PAIRS ? "block_radix_sort_pairs" : "block_radix_sort_keys";

  fill_keys_kernel<K><<<helper_grid(), 256>>>(ws.keys_in.get(), ws.values_in.get(), n, tile, seed);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  download(ws.host_keys_in.get(), ws.keys_in, n);
  download(ws.host_values_in.get(), ws.values_in, n);

  auto launch = [&] {
    sort_kernel<K, BLOCK, ITEMS, PAIRS><<<static_cast<unsigned>(tiles), BLOCK>>>(
      ws.keys_in.get(), ws.keys_out.get(), ws.values_in.get(), ws.values_out.get());
  };

  ws.keys_out.poison();
  ws.values_out.poison();
  launch();
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  download(ws.host_keys_out.get(), ws.keys_out, n);
  download(ws.host_values_out.get(), ws.values_out, n);
  check_sorted_tiles(ws, n, tile, kCheckEvery, PAIRS, kind, BLOCK, ITEMS);

  const double ms    = median_ms(launch);
  const double bytes = 2.0 * double(tiles * tile) * double(sizeof(K) + (PAIRS ? sizeof(std::uint32_t) : 0));
  print_csv_row(kind, dtype_name<K>(), "radix4", BLOCK, ITEMS, gbps(bytes, ms));
}

constexpr int kBins = 256;

template <int BLOCK, int ITEMS, cub::BlockHistogramAlgorithm ALG>
__global__ void __launch_bounds__(BLOCK)
  histogram_kernel(const std::uint8_t* __restrict__ samples, std::uint32_t* __restrict__ hist)
{
  using Histogram = cub::BlockHistogram<std::uint8_t, BLOCK, ITEMS, kBins, ALG>;
  __shared__ typename Histogram::TempStorage temp;
  __shared__ std::uint32_t bins[kBins];

  constexpr std::size_t kTile = std::size_t(BLOCK) * ITEMS;
  std::uint8_t items[ITEMS];
  cub::LoadDirectBlocked(threadIdx.x, samples + std::size_t(blockIdx.x) * kTile, items);
  Histogram(temp).Histogram(items, bins);
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += BLOCK)
  {
    hist[std::size_t(blockIdx.x) * kBins + b] = bins[b];
  }
}

template <int BLOCK, int ITEMS, cub::BlockHistogramAlgorithm ALG>
void bench_histogram(DeviceBuffer<std::uint8_t>& samples,
                     PinnedBuffer<std::uint8_t>& host_samples,
                     DeviceBuffer<std::uint32_t>& hist,
                     PinnedBuffer<std::uint32_t>& host_hist)
{
  constexpr std::size_t tile = std::size_t(BLOCK) * ITEMS;
  const std::size_t tiles    = samples.size() / tile;
  const char* algorithm      = ALG == cub::BLOCK_HISTO_ATOMIC ? "atomic" : "sort";
  auto launch                = [&] {
    histogram_kernel<BLOCK, ITEMS, ALG><<<static_cast<unsigned>(tiles), BLOCK>>>(samples.get(), hist.get());
  };

  hist.poison();
  launch();
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  download(host_hist.get(), hist, tiles * kBins);
  std::vector<std::uint32_t> want(kBins);
  for (std::size_t t = 0; t < tiles; ++t)
  {
    const std::uint32_t* got = host_hist.get() + t * kBins;
    std::uint64_t total      = 0;
    for (int b = 0; b < kBins; ++b)
    {
      total += got[b];
    }
    if (total != tile)
    {
      fail("block_histogram %s block=%d items=%d: tile %zu counts %llu samples, expected %zu",
           algorithm, BLOCK, ITEMS, t, static_cast<unsigned long long>(total), tile);
    }
    if (t % kCheckEvery != 0)
    {
      continue;
    }
    std::fill(want.begin(), want.end(), 0u);
    for (std::size_t i = 0; i < tile; ++i)
    {
      ++want[host_samples[t * tile + i]];
    }
    for (int b = 0; b < kBins; ++b)
    {
      if (got[b] != want[b])
      {
        fail("block_histogram %s block=%d items=%d: tile %zu bin %d holds %u, expected %u",
             algorithm, BLOCK, ITEMS, t, b, got[b], want[b]);
      }
    }
  }

  const double ms = median_ms(launch);
  print_csv_row("block_histogram", "u8", algorithm, BLOCK, ITEMS, gbps(double(tiles * tile), ms));
}

} // namespace

int main(int argc, char** argv)
{
  const std::size_t n = parse_n(argc, argv) / kMaxTile * kMaxTile;
  if (n == 0)
  {
    fail("n must be at least one tile of %zu keys", kMaxTile);
  }
  print_device_info(n);
  print_csv_header();

  static_for<std::tuple_size<KeyTypes>::value>([&](auto type_index) {
    constexpr std::size_t TI = decltype(type_index)::value;
    using K                  = std::tuple_element_t<TI, KeyTypes>;
    Workspace<K> ws(n);
    static_for<std::size(kBlockSizes)>([&](auto block_index) {
      constexpr int BLOCK = kBlockSizes[decltype(block_index)::value];
      static_for<std::size(kItemsPerThread)>([&](auto items_index) {
        constexpr int ITEMS = kItemsPerThread[decltype(items_index)::value];
        bench_sort<K, BLOCK, ITEMS, false>(ws, 0x5027 + TI);
        bench_sort<K, BLOCK, ITEMS, true>(ws, 0x5027 + TI);
      });
    });
  });

  // Byte samples, uniform over 0..=255.
  DeviceBuffer<std::uint8_t> samples(n);
  PinnedBuffer<std::uint8_t> host_samples(n);
  DeviceBuffer<std::uint32_t> hist(n / (128 * 4) * kBins);
  PinnedBuffer<std::uint32_t> host_hist(n / (128 * 4) * kBins);
  fill_pattern(samples, 0x4157, 255);
  download(host_samples.get(), samples, n);
  static_for<std::size(kBlockSizes)>([&](auto block_index) {
    constexpr int BLOCK = kBlockSizes[decltype(block_index)::value];
    static_for<std::size(kItemsPerThread)>([&](auto items_index) {
      constexpr int ITEMS = kItemsPerThread[decltype(items_index)::value];
      bench_histogram<BLOCK, ITEMS, cub::BLOCK_HISTO_ATOMIC>(samples, host_samples, hist, host_hist);
      bench_histogram<BLOCK, ITEMS, cub::BLOCK_HISTO_SORT>(samples, host_samples, hist, host_hist);
    });
  });
  return EXIT_SUCCESS;
}
