// CUB reference: block and warp merge sort of one tile per block or per warp.
//
//   block_merge_sort_keys    each block loads its tile of keys (blocked, through
//                            BLOCK_LOAD_WARP_TRANSPOSE), sorts it with
//                            cub::BlockMergeSort<K, BLOCK, ITEMS>::StableSort by
//                            the keys' bit order (a total order: floats with NaNs
//                            and infinities as CUB's radix sort orders them) and
//                            stores it through BLOCK_STORE_WARP_TRANSPOSE
//   block_merge_sort_pairs   the same with a u32 value beside each key
//   warp_merge_sort_keys     each warp of the block loads its own tile of 32 x
//                            ITEMS keys (WARP_LOAD_TRANSPOSE), sorts it with
//                            cub::WarpMergeSort<K, ITEMS, 32>::StableSort and
//                            stores it through WARP_STORE_TRANSPOSE
//   warp_merge_sort_pairs    the same with a u32 value beside each key
//
// Keys u32, i32, f32 (random bits) and u64; blocks of 128 and 256 threads; 4,
// 8 and 16 items per thread. The algorithm column is "merge" for the block's
// sort and "warp32" for the warps'. Every configuration is checked before it
// is timed: every tile sorted, and every 97th tile against a stable host sort
// (the values, each its key's position in the tile, show stability). gbps
// counts the bytes of keys (and values) read and written: 2 * n * (sizeof(K)
// [+ 4]).
//
// Output: CSV on stdout (see README.md). Example 30 (`examples/30_merge_sort.rs`)
// runs the same configurations and prints its figures beside these.
//
// Usage: cub_merge_sort [n]   (default n = 2^28 keys, rounded down to whole 4096-key tiles)
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
constexpr int kWarp = 32;
using KeyTypes = std::tuple<std::uint32_t, int, float, std::uint64_t>;

// The comparator both sorts take: whether `a` goes strictly before `b`.
struct BitOrderLess
{
  template <typename K>
  __host__ __device__ bool operator()(const K& a, const K& b) const
  {
    return ordered_bits(a) < ordered_bits(b);
  }
};

template <typename K, int BLOCK, int ITEMS, bool PAIRS>
__global__ void __launch_bounds__(BLOCK)
  block_sort_kernel(const K* __restrict__ keys_in, K* __restrict__ keys_out, const std::uint32_t* __restrict__ values_in, std::uint32_t* __restrict__ values_out)
{
  using V           = std::uint32_t;
  using LoadKeys    = cub::BlockLoad<K, BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using LoadValues  = cub::BlockLoad<V, BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using StoreKeys   = cub::BlockStore<K, BLOCK, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using StoreValues = cub::BlockStore<V, BLOCK, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using Sort        = cub::BlockMergeSort<K, BLOCK, ITEMS, std::conditional_t<PAIRS, V, cub::NullType>>;
  union SharedStorage
  {
    typename LoadKeys::TempStorage load_keys;
    typename LoadValues::TempStorage load_values;
    typename StoreKeys::TempStorage store_keys;
    typename StoreValues::TempStorage store_values;
    typename Sort::TempStorage sort;
  };
  __shared__ SharedStorage smem;

  constexpr std::size_t kTile   = std::size_t(BLOCK) * ITEMS;
  const std::size_t tile_offset = std::size_t(blockIdx.x) * kTile;
  K keys[ITEMS];
  LoadKeys(smem.load_keys).Load(keys_in + tile_offset, keys);
  __syncthreads(); // the next use reuses the load's scratch
  if constexpr (PAIRS)
  {
    V values[ITEMS];
    LoadValues(smem.load_values).Load(values_in + tile_offset, values);
    __syncthreads();
    Sort(smem.sort).StableSort(keys, values, BitOrderLess{});
    __syncthreads();
    StoreValues(smem.store_values).Store(values_out + tile_offset, values);
  }
  else
  {
    Sort(smem.sort).StableSort(keys, BitOrderLess{});
  }
  __syncthreads();
  StoreKeys(smem.store_keys).Store(keys_out + tile_offset, keys);
}

template <typename K, int BLOCK, int ITEMS, bool PAIRS>
__global__ void __launch_bounds__(BLOCK)
  warp_sort_kernel(const K* __restrict__ keys_in, K* __restrict__ keys_out, const std::uint32_t* __restrict__ values_in, std::uint32_t* __restrict__ values_out)
{
  using V           = std::uint32_t;
  using LoadKeys    = cub::WarpLoad<K, ITEMS, cub::WARP_LOAD_TRANSPOSE, kWarp>;
  using LoadValues  = cub::WarpLoad<V, ITEMS, cub::WARP_LOAD_TRANSPOSE, kWarp>;
  using StoreKeys   = cub::WarpStore<K, ITEMS, cub::WARP_STORE_TRANSPOSE, kWarp>;
  using StoreValues = cub::WarpStore<V, ITEMS, cub::WARP_STORE_TRANSPOSE, kWarp>;
  using Sort        = cub::WarpMergeSort<K, ITEMS, kWarp, std::conditional_t<PAIRS, V, cub::NullType>>;
  union SharedStorage
  {
    typename LoadKeys::TempStorage load_keys;
    typename LoadValues::TempStorage load_values;
    typename StoreKeys::TempStorage store_keys;
    typename StoreValues::TempStorage store_values;
    typename Sort::TempStorage sort;
  };
  constexpr int kWarps = BLOCK / kWarp;
  __shared__ SharedStorage smem[kWarps];

  const int warp                = threadIdx.x / kWarp;
  constexpr std::size_t kTile   = std::size_t(kWarp) * ITEMS;
  const std::size_t tile_offset = (std::size_t(blockIdx.x) * kWarps + warp) * kTile;
  SharedStorage& mine           = smem[warp];
  K keys[ITEMS];
  LoadKeys(mine.load_keys).Load(keys_in + tile_offset, keys);
  __syncwarp(); // the next use reuses the load's scratch
  if constexpr (PAIRS)
  {
    V values[ITEMS];
    LoadValues(mine.load_values).Load(values_in + tile_offset, values);
    __syncwarp();
    Sort(mine.sort).StableSort(keys, values, BitOrderLess{});
    __syncwarp();
    StoreValues(mine.store_values).Store(values_out + tile_offset, values);
  }
  else
  {
    Sort(mine.sort).StableSort(keys, BitOrderLess{});
  }
  __syncwarp();
  StoreKeys(mine.store_keys).Store(keys_out + tile_offset, keys);
}

// One configuration: the block's sort (WARPS false, tiles of BLOCK x ITEMS) or
// the warps' (tiles of 32 x ITEMS).
template <typename K, int BLOCK, int ITEMS, bool PAIRS, bool WARPS>
void bench_sort(Workspace<K>& ws, std::uint64_t seed)
{
  constexpr std::size_t tile  = std::size_t(WARPS ? kWarp : BLOCK) * ITEMS;
  constexpr std::size_t block_tile = std::size_t(BLOCK) * ITEMS;
  const std::size_t n         = ws.keys_in.size() / block_tile * block_tile;
  const char* kind            = WARPS ? (PAIRS ? "warp_merge_sort_pairs" : "warp_merge_sort_keys")
                                      : (PAIRS ? "block_merge_sort_pairs" : "block_merge_sort_keys");
  const char* algorithm       = WARPS ? "warp32" : "merge";

  fill_keys_kernel<K><<<helper_grid(), 256>>>(ws.keys_in.get(), ws.values_in.get(), n, tile, seed);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  download(ws.host_keys_in.get(), ws.keys_in, n);
  download(ws.host_values_in.get(), ws.values_in, n);

  const unsigned blocks = static_cast<unsigned>(n / block_tile);
  auto launch = [&] {
    if constexpr (WARPS)
    {
      warp_sort_kernel<K, BLOCK, ITEMS, PAIRS><<<blocks, BLOCK>>>(
        ws.keys_in.get(), ws.keys_out.get(), ws.values_in.get(), ws.values_out.get());
    }
    else
    {
      block_sort_kernel<K, BLOCK, ITEMS, PAIRS><<<blocks, BLOCK>>>(
        ws.keys_in.get(), ws.keys_out.get(), ws.values_in.get(), ws.values_out.get());
    }
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
  const double bytes = 2.0 * double(n) * double(sizeof(K) + (PAIRS ? sizeof(std::uint32_t) : 0));
  print_csv_row(kind, dtype_name<K>(), algorithm, BLOCK, ITEMS, gbps(bytes, ms));
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
        bench_sort<K, BLOCK, ITEMS, false, false>(ws, 0x3e29 + TI);
        bench_sort<K, BLOCK, ITEMS, true, false>(ws, 0x3e29 + TI);
        bench_sort<K, BLOCK, ITEMS, false, true>(ws, 0x3e29 + TI);
        bench_sort<K, BLOCK, ITEMS, true, true>(ws, 0x3e29 + TI);
      });
    });
  });
  return EXIT_SUCCESS;
}
