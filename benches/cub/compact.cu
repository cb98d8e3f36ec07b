// Stream compaction references: keep the f32 elements below 0.3 (30% of a
// uniform [0, 1) input), in any order for the atomic forms.
//
//   cub_select_if        cub::DeviceSelect::If (stable: input order)
//   atomic_per_element   one atomicAdd on the counter per kept element
//   cg_coalesced         the Cooperative Groups guide's warp-aggregated
//                        append: coalesced_threads() in the branch, the
//                        group's rank 0 adds its size, the base is shuffled
//
// Each form is validated (count, and two checksums of the kept values' bits,
// which do not depend on their order) before it is timed. GB/s counts the
// input read and the kept elements written, as CUB's device_select row does.
// Output: CSV on stdout (see README.md).
//
// Usage: cub_compact [n]   (default n = 2^28 elements)
#include "common.cuh"

#include <cooperative_groups.h>

using namespace cubbench;
namespace cg = cooperative_groups;

namespace {

struct Below
{
  __host__ __device__ bool operator()(float x) const
  {
    return x < 0.3f;
  }
};

__global__ void atomic_per_element(const float* __restrict__ in, float* out, unsigned* count, std::size_t n)
{
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && Below{}(in[i]))
  {
    out[atomicAdd(count, 1u)] = in[i];
  }
}

__device__ unsigned append_index(unsigned* count)
{
  cg::coalesced_group g = cg::coalesced_threads();
  unsigned base         = 0;
  if (g.thread_rank() == 0)
  {
    base = atomicAdd(count, g.num_threads());
  }
  return g.shfl(base, 0) + g.thread_rank();
}

__global__ void cg_coalesced(const float* __restrict__ in, float* out, unsigned* count, std::size_t n)
{
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
  {
    const float x = in[i];
    if (Below{}(x))
    {
      out[append_index(count)] = x;
    }
  }
}

// Count and two order-free checksums of the first `k` values' bits.
struct Digest
{
  std::size_t count = 0;
  std::uint64_t sum = 0;
  std::uint64_t mix = 0;

  void add(float v)
  {
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    ++count;
    sum += b;
    mix ^= mix64(b);
  }
  bool operator==(const Digest& o) const
  {
    return count == o.count && sum == o.sum && mix == o.mix;
  }
};

Digest digest(const float* v, std::size_t k)
{
  Digest d;
  for (std::size_t i = 0; i < k; ++i)
  {
    d.add(v[i]);
  }
  return d;
}

void expect(const char* what, const Digest& got, const Digest& want)
{
  if (!(got == want))
  {
    fail("%s: kept %zu elements (checksums %llx %llx), expected %zu (%llx %llx)",
         what,
         got.count,
         (unsigned long long) got.sum,
         (unsigned long long) got.mix,
         want.count,
         (unsigned long long) want.sum,
         (unsigned long long) want.mix);
  }
}

} // namespace

int main(int argc, char** argv)
{
  const std::size_t n = parse_n(argc, argv);
  print_device_info(n);
  print_csv_header();

  DeviceBuffer<float> in(n);
  DeviceBuffer<float> out(n);
  DeviceBuffer<unsigned> count(1);
  DeviceBuffer<int> cub_count(1);
  fill_pattern(in, 7, 0);
  PinnedBuffer<float> host(n);
  download(host.get(), in, n);
  Digest want;
  for (std::size_t i = 0; i < n; ++i)
  {
    if (Below{}(host[i]))
    {
      want.add(host[i]);
    }
  }
  const double bytes = double(n) * 4.0 + double(want.count) * 4.0;
  std::fprintf(stderr, "kept %zu of %zu (%.1f%%)\n", want.count, n, 100.0 * double(want.count) / double(n));

  {
    std::size_t temp_bytes = 0;
    CUDA_CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, in.get(), out.get(), cub_count.get(), int(n), Below{}));
    DeviceBuffer<unsigned char> temp(temp_bytes);
    auto run = [&] {
      CUDA_CHECK(cub::DeviceSelect::If(temp.get(), temp_bytes, in.get(), out.get(), cub_count.get(), int(n), Below{}));
    };
    out.poison();
    run();
    CUDA_CHECK(cudaDeviceSynchronize());
    int k = 0;
    download(&k, cub_count, 1);
    download(host.get(), out, std::size_t(k));
    expect("cub::DeviceSelect::If", digest(host.get(), std::size_t(k)), want);
    print_csv_row("compact", "f32", "cub_select_if", 0, 0, gbps(bytes, median_ms(run)));
  }

  const unsigned blocks = unsigned((n + 255) / 256);
  auto atomic_form = [&](const char* name, auto kernel) {
    auto run = [&] {
      CUDA_CHECK(cudaMemsetAsync(count.get(), 0, 4));
      kernel<<<blocks, 256>>>(in.get(), out.get(), count.get(), n);
    };
    out.poison();
    run();
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
    unsigned k = 0;
    download(&k, count, 1);
    if (k > n)
    {
      fail("%s: count %u past n", name, k);
    }
    download(host.get(), out, std::size_t(k));
    expect(name, digest(host.get(), std::size_t(k)), want);
    // The memset is timed with the kernel: both are what one compaction costs.
    print_csv_row("compact", "f32", name, 256, 1, gbps(bytes, median_ms(run)));
  };
  atomic_form("atomic_per_element", atomic_per_element);
  atomic_form("cg_coalesced", cg_coalesced);
  return 0;
}
