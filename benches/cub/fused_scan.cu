// CUB reference: a map -> inclusive sum -> map chain over u32, the work that
// coopgraph's DeviceScan with map_input and map_output does in one kernel.
//
//   device_scan u32 fused_map_scan_map_3calls
//       a transform kernel (x * 3 + 1), cub::DeviceScan::InclusiveSum, a
//       transform kernel (y * 2 + 1): three launches and two temporaries, the
//       chain as separate CUB calls and map kernels
//   device_scan u32 fused_map_scan_map_iterators
//       one cub::DeviceScan::InclusiveSum that reads through a
//       thrust::transform_iterator and writes through a
//       thrust::transform_output_iterator: CUB's own way to fuse the maps
//
// The maps wrap modulo 2^32, as coopgraph's u32 arithmetic does. Inputs are
// integers in [0, 3]. Every configuration is checked against the host before
// it is timed (median of individually timed runs). GB/s counts the chain's own
// traffic, 2 * n * 4 bytes (input read once, output written once), as
// coopgraph's fused row in example 06 does, so the ratio is one of times.
//
// Usage: cub_fused_scan [n]   (default n = 2^28). Output: CSV on stdout.
#include "common.cuh"

#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>

using namespace cubbench;

namespace {

constexpr std::uint64_t kSeedFused = 0xDE;

struct MapIn
{
  __host__ __device__ std::uint32_t operator()(std::uint32_t x) const
  {
    return x * 3u + 1u;
  }
};

struct MapOut
{
  __host__ __device__ std::uint32_t operator()(std::uint32_t y) const
  {
    return y * 2u + 1u;
  }
};

// out[i] = f(in[i]): 16-byte accesses over the whole vectors (cudaMalloc's
// buffers are 256-byte aligned), then the last n % 4 elements one by one.
template <typename F>
__global__ void transform_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out, std::size_t n, F f)
{
  const std::size_t vectors = n / 4;
  const auto* in4           = reinterpret_cast<const uint4*>(in);
  auto* out4                = reinterpret_cast<uint4*>(out);
  const std::size_t stride  = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t first   = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t i = first; i < vectors; i += stride)
  {
    uint4 v = in4[i];
    v.x     = f(v.x);
    v.y     = f(v.y);
    v.z     = f(v.z);
    v.w     = f(v.w);
    out4[i] = v;
  }
  for (std::size_t i = vectors * 4 + first; i < n; i += stride)
  {
    out[i] = f(in[i]);
  }
}

// Enough blocks of 256 threads for every SM to hold as many as it can.
unsigned transform_grid(std::size_t n)
{
  int device = 0;
  int sms    = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t wanted = (n / 4 + 255) / 256;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(wanted, std::size_t(sms) * 8)));
}

// Fails unless out[i] == MapOut(sum of MapIn(in[j]) for j <= i), modulo 2^32.
void expect_chain(const char* what, const DeviceBuffer<std::uint32_t>& out, const PinnedBuffer<std::uint32_t>& in, std::size_t n)
{
  PinnedBuffer<std::uint32_t> got(n);
  download(got.get(), out, n);
  std::uint32_t acc = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    acc += MapIn{}(in[i]);
    const std::uint32_t want = MapOut{}(acc);
    if (got[i] != want)
    {
      fail("%s: element %zu is %u, expected %u", what, i, got[i], want);
    }
  }
}

// Scratch of one InclusiveSum call, sized by its null-pointer call.
template <typename Call>
DeviceBuffer<unsigned char> scratch_for(Call call, std::size_t& bytes)
{
  bytes = 0;
  CUDA_CHECK(call(nullptr, bytes));
  return DeviceBuffer<unsigned char>(std::max<std::size_t>(bytes, 1));
}

void bench_fused(std::size_t n)
{
  using T = std::uint32_t;
  DeviceBuffer<T> in(n);
  DeviceBuffer<T> mapped(n);
  DeviceBuffer<T> scanned(n);
  DeviceBuffer<T> out(n);
  fill_pattern(in, kSeedFused, 3);
  PinnedBuffer<T> host_in(n);
  download(host_in.get(), in, n);
  const int num_items = static_cast<int>(n);
  const double bytes  = 2.0 * double(n) * sizeof(T);
  const unsigned grid = transform_grid(n);

  {
    auto scan = [&](void* temp, std::size_t& temp_bytes) {
      return cub::DeviceScan::InclusiveSum(temp, temp_bytes, mapped.get(), scanned.get(), num_items);
    };
    std::size_t temp_bytes = 0;
    auto temp              = scratch_for(scan, temp_bytes);
    auto chain             = [&] {
      transform_kernel<<<grid, 256>>>(in.get(), mapped.get(), n, MapIn{});
      CUDA_CHECK_LAUNCH();
      CUDA_CHECK(scan(temp.get(), temp_bytes));
      transform_kernel<<<grid, 256>>>(scanned.get(), out.get(), n, MapOut{});
    };
    out.poison();
    chain();
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
    expect_chain("device_scan u32 fused_map_scan_map_3calls", out, host_in, n);
    const double ms = median_ms(chain);
    print_csv_row("device_scan", "u32", "fused_map_scan_map_3calls", 0, 0, gbps(bytes, ms));
  }
  {
    auto first = thrust::make_transform_iterator(in.get(), MapIn{});
    auto sink  = thrust::make_transform_output_iterator(out.get(), MapOut{});
    auto scan  = [&](void* temp, std::size_t& temp_bytes) {
      return cub::DeviceScan::InclusiveSum(temp, temp_bytes, first, sink, num_items);
    };
    std::size_t temp_bytes = 0;
    auto temp              = scratch_for(scan, temp_bytes);
    auto call              = [&] {
      CUDA_CHECK(scan(temp.get(), temp_bytes));
    };
    out.poison();
    call();
    CUDA_CHECK(cudaDeviceSynchronize());
    expect_chain("device_scan u32 fused_map_scan_map_iterators", out, host_in, n);
    const double ms = median_ms(call);
    print_csv_row("device_scan", "u32", "fused_map_scan_map_iterators", 0, 0, gbps(bytes, ms));
  }
}

} // namespace

int main(int argc, char** argv)
{
  const std::size_t n = parse_n(argc, argv);
  print_device_info(n);
  print_csv_header();
  bench_fused(n);
  return EXIT_SUCCESS;
}
