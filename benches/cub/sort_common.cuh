// What the sort references share (sort.cu, merge_sort.cu): the keys' bit
// order, the keys and values the sorts take, the buffers of one key type, and
// the check of the sorted tiles against a stable host sort.
#pragma once

#include "common.cuh"

#include <algorithm>
#include <numeric>

namespace cubbench {

// The key's bits in the order CUB sorts them (cub::Traits<K>::TwiddleIn):
// signed integers with the sign bit flipped, floats with the sign bit flipped
// when positive and every bit flipped when negative.
template <typename K>
__host__ __device__ std::uint64_t ordered_bits(K key)
{
  if constexpr (sizeof(K) == 8)
  {
    std::uint64_t b;
    std::memcpy(&b, &key, 8);
    return b;
  }
  else
  {
    std::uint32_t b;
    std::memcpy(&b, &key, 4);
    if constexpr (std::is_floating_point<K>::value)
    {
      return (b & 0x80000000u) ? std::uint64_t(~b) : std::uint64_t(b ^ 0x80000000u);
    }
    else if constexpr (std::is_signed<K>::value)
    {
      return std::uint64_t(b ^ 0x80000000u);
    }
    else
    {
      return b;
    }
  }
}

template <typename K>
__global__ void fill_keys_kernel(K* keys, std::uint32_t* values, std::size_t n, std::size_t tile, std::uint64_t seed)
{
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
  {
    const std::uint64_t h = mix64(i ^ (seed << 40));
    // One key in 8 repeats a small set, so equal keys (stability) show.
    const std::uint64_t bits = (h & 7) == 0 ? (h >> 60) : h;
    if constexpr (sizeof(K) == 8)
    {
      std::memcpy(&keys[i], &bits, 8);
    }
    else
    {
      const std::uint32_t b = std::uint32_t(bits >> 16);
      std::memcpy(&keys[i], &b, 4);
    }
    values[i] = std::uint32_t(i % tile);
  }
}

template <typename K>
struct Workspace
{
  explicit Workspace(std::size_t n)
      : keys_in(n)
      , keys_out(n)
      , values_in(n)
      , values_out(n)
      , host_keys_in(n)
      , host_keys_out(n)
      , host_values_in(n)
      , host_values_out(n)
  {}

  DeviceBuffer<K> keys_in;
  DeviceBuffer<K> keys_out;
  DeviceBuffer<std::uint32_t> values_in;
  DeviceBuffer<std::uint32_t> values_out;
  PinnedBuffer<K> host_keys_in;
  PinnedBuffer<K> host_keys_out;
  PinnedBuffer<std::uint32_t> host_values_in;
  PinnedBuffer<std::uint32_t> host_values_out;
};

// Checks the sorted tiles of `tile` keys (and their values, each its key's
// position in the tile, when `pairs`): every tile sorted by the keys' bit
// order, and every `check_every`-th against a stable host sort. Exits
// non-zero naming the configuration on the first difference.
template <typename K>
void check_sorted_tiles(Workspace<K>& ws, std::size_t n, std::size_t tile, std::size_t check_every, bool pairs, const char* kind, int block, int items)
{
  const std::size_t tiles = n / tile;
  std::vector<std::uint32_t> order(tile);
  for (std::size_t t = 0; t < tiles; ++t)
  {
    const K* in  = ws.host_keys_in.get() + t * tile;
    const K* out = ws.host_keys_out.get() + t * tile;
    for (std::size_t i = 1; i < tile; ++i)
    {
      if (ordered_bits(out[i - 1]) > ordered_bits(out[i]))
      {
        fail("%s %s block=%d items=%d: tile %zu is not sorted at %zu", kind, dtype_name<K>(), block, items, t, i);
      }
    }
    if (t % check_every != 0)
    {
      continue;
    }
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return ordered_bits(in[a]) < ordered_bits(in[b]);
    });
    for (std::size_t i = 0; i < tile; ++i)
    {
      const bool key_ok   = ordered_bits(out[i]) == ordered_bits(in[order[i]]);
      const bool value_ok = !pairs || ws.host_values_out[t * tile + i] == order[i];
      if (!key_ok || !value_ok)
      {
        fail("%s %s block=%d items=%d: tile %zu position %zu holds the key of position %u of the input, expected %u",
             kind,
             dtype_name<K>(),
             block,
             items,
             t,
             i,
             pairs ? ws.host_values_out[t * tile + i] : 0u,
             order[i]);
      }
    }
  }
}

} // namespace cubbench
