// CUB reference: cub::BlockRunLengthDecode.
//
//   block_run_length_decode u32 runs{R}, block B, items D
//       each block takes B * R runs (a u32 value and a u32 length in [1, 7]
//       each, blocked: thread t holds runs t * R .. t * R + R - 1), and decodes
//       them window by window, B * D decoded items at a time
//       (RunLengthDecode(items, from)), into its part of the output, blocked
//       (thread t writes positions from + t * D .. from + t * D + D - 1 below
//       the block's total). Where a block's part starts is the sum of the
//       lengths before its runs, computed on the host.
//
// Configurations: 128 and 256 threads; (R, D) = (2, 4), (4, 8), (4, 16).
// Every configuration's whole output is checked against the host's decoding
// before it is timed. GB/s counts the runs read (8 bytes each) and the decoded
// items written (4 bytes each), as example 33 does.
//
// Usage: cub_run_length_decode [n]   (default n = 2^28: n / 4 runs).
#include "common.cuh"

using namespace cubbench;

namespace {

constexpr std::uint32_t kMaxLength = 7;

void upload(DeviceBuffer<std::uint32_t>& dev, const std::vector<std::uint32_t>& host)
{
  CUDA_CHECK(cudaMemcpy(dev.get(), host.data(), host.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
}

template <int BLOCK, int RUNS, int DECODED>
__global__ void decode_kernel(const std::uint32_t* __restrict__ values,
                              const std::uint32_t* __restrict__ lengths,
                              const std::uint32_t* __restrict__ offsets,
                              std::uint32_t* __restrict__ out)
{
  using Decode = cub::BlockRunLengthDecode<std::uint32_t, BLOCK, RUNS, DECODED>;
  __shared__ typename Decode::TempStorage temp;
  std::uint32_t v[RUNS];
  std::uint32_t l[RUNS];
  const std::size_t first = (std::size_t(blockIdx.x) * BLOCK + threadIdx.x) * RUNS;
  for (int i = 0; i < RUNS; ++i)
  {
    v[i] = values[first + i];
    l[i] = lengths[first + i];
  }
  std::uint32_t total = 0;
  Decode decode(temp, v, l, total);
  const std::uint32_t base = offsets[blockIdx.x];
  for (std::uint32_t from = 0; from < total; from += BLOCK * DECODED)
  {
    std::uint32_t items[DECODED];
    decode.RunLengthDecode(items, from);
    for (int i = 0; i < DECODED; ++i)
    {
      const std::uint32_t p = from + threadIdx.x * DECODED + i;
      if (p < total)
      {
        out[base + p] = items[i];
      }
    }
  }
}

// The runs: hashed values, lengths uniform in [1, kMaxLength] (xorshift, the
// stream example 33 draws). cub::BlockRunLengthDecode takes runs of length 0
// only at the end of a block's runs: with them inside, its decoding is wrong.
void make_runs(std::vector<std::uint32_t>& values, std::vector<std::uint32_t>& lengths, std::size_t n)
{
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  values.resize(n);
  lengths.resize(n);
  for (std::size_t i = 0; i < n; ++i)
  {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    values[i]  = static_cast<std::uint32_t>(state >> 32);
    lengths[i] = static_cast<std::uint32_t>(1 + state % kMaxLength);
  }
}

template <int BLOCK, int RUNS, int DECODED>
void bench_decode(const std::vector<std::uint32_t>& values,
                  const std::vector<std::uint32_t>& lengths,
                  const DeviceBuffer<std::uint32_t>& d_values,
                  const DeviceBuffer<std::uint32_t>& d_lengths)
{
  const std::size_t per_block = std::size_t(BLOCK) * RUNS;
  const std::size_t blocks    = values.size() / per_block;
  const std::size_t used      = blocks * per_block;
  if (blocks == 0)
  {
    return; // fewer runs than one block takes
  }
  std::vector<std::uint32_t> offsets(std::max<std::size_t>(blocks, 1));
  std::size_t total = 0;
  for (std::size_t b = 0; b < blocks; ++b)
  {
    offsets[b] = static_cast<std::uint32_t>(total);
    for (std::size_t r = b * per_block; r < (b + 1) * per_block; ++r)
    {
      total += lengths[r];
    }
  }
  DeviceBuffer<std::uint32_t> d_offsets(offsets.size());
  upload(d_offsets, offsets);
  DeviceBuffer<std::uint32_t> out(std::max<std::size_t>(total, 1));
  auto launch = [&] {
    decode_kernel<BLOCK, RUNS, DECODED>
      <<<static_cast<unsigned>(blocks), BLOCK>>>(d_values.get(), d_lengths.get(), d_offsets.get(), out.get());
  };
  char what[96];
  std::snprintf(what, sizeof(what), "block_run_length_decode u32 runs%d %dx%d", RUNS, BLOCK, DECODED);

  out.poison();
  launch();
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  PinnedBuffer<std::uint32_t> got(std::max<std::size_t>(total, 1));
  download(got.get(), out, total);
  std::size_t at = 0;
  for (std::size_t r = 0; r < used; ++r)
  {
    for (std::uint32_t k = 0; k < lengths[r]; ++k, ++at)
    {
      if (got[at] != values[r])
      {
        fail("%s: decoded item %zu is %u, expected %u", what, at, got[at], values[r]);
      }
    }
  }

  const double ms    = median_ms(launch);
  const double bytes = double(used) * 8.0 + double(total) * 4.0;
  char alg[16];
  std::snprintf(alg, sizeof(alg), "runs%d", RUNS);
  print_csv_row("block_run_length_decode", "u32", alg, BLOCK, DECODED, gbps(bytes, ms));
}

} // namespace

int main(int argc, char** argv)
{
  const std::size_t n = parse_n(argc, argv);
  print_device_info(n);
  print_csv_header();
  std::vector<std::uint32_t> values;
  std::vector<std::uint32_t> lengths;
  make_runs(values, lengths, n / 4);
  DeviceBuffer<std::uint32_t> d_values(std::max<std::size_t>(values.size(), 1));
  DeviceBuffer<std::uint32_t> d_lengths(std::max<std::size_t>(lengths.size(), 1));
  upload(d_values, values);
  upload(d_lengths, lengths);
  bench_decode<128, 2, 4>(values, lengths, d_values, d_lengths);
  bench_decode<128, 4, 8>(values, lengths, d_values, d_lengths);
  bench_decode<128, 4, 16>(values, lengths, d_values, d_lengths);
  bench_decode<256, 2, 4>(values, lengths, d_values, d_lengths);
  bench_decode<256, 4, 8>(values, lengths, d_values, d_lengths);
  bench_decode<256, 4, 16>(values, lengths, d_values, d_lengths);
  return EXIT_SUCCESS;
}
