// CUDA C++ reference: SAXPY in place, y[i] = a * x[i] + y[i], over n f32.
//
// What a hand-written CUDA kernel reaches on the same buffers, beside the
// device-to-device copy: a grid-stride loop of one full-occupancy wave with
// four elements per thread and step (the shape coopgraph's example 09 builds
// through `at`/`write`), one element per thread over n / 256 blocks, and a
// grid-stride loop over float4 vectors. GB/s counts 12 bytes per element (x
// and y read, y written). Each variant is checked against the host once, from
// fresh inputs, before it is timed. Output: CSV on stdout (see README.md).
//
// Usage: cub_saxpy [n]   (default n = 2^28 elements)
#include "common.cuh"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace cubbench;

namespace {

constexpr int kBlock  = 256;
constexpr float kA    = 1.5f;
constexpr int kUnroll = 4;

__global__ void __launch_bounds__(kBlock)
  saxpy_grid_stride(const float* __restrict__ x, float* __restrict__ y, float a, std::size_t n)
{
  const std::size_t threads = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t first   = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t base = first; base < n; base += threads * kUnroll)
  {
    float v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
    {
      const std::size_t i = base + u * threads;
      v[u]                = i < n ? fmaf(x[i], a, y[i]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
    {
      const std::size_t i = base + u * threads;
      if (i < n)
      {
        y[i] = v[u];
      }
    }
  }
}

__global__ void __launch_bounds__(kBlock)
  saxpy_one_per_thread(const float* __restrict__ x, float* __restrict__ y, float a, std::size_t n)
{
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
  {
    y[i] = fmaf(x[i], a, y[i]);
  }
}

__global__ void __launch_bounds__(kBlock)
  saxpy_float4(const float* __restrict__ x, float* __restrict__ y, float a, std::size_t n)
{
  const std::size_t threads = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t vectors = n / 4;
  const float4* x4          = reinterpret_cast<const float4*>(x);
  float4* y4                = reinterpret_cast<float4*>(y);
  for (std::size_t v = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors; v += threads)
  {
    const float4 xv = x4[v];
    float4 yv       = y4[v];
    yv.x            = fmaf(xv.x, a, yv.x);
    yv.y            = fmaf(xv.y, a, yv.y);
    yv.z            = fmaf(xv.z, a, yv.z);
    yv.w            = fmaf(xv.w, a, yv.w);
    y4[v]           = yv;
  }
  // The tail past the last whole vector.
  const std::size_t i = vectors * 4 + std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
  {
    y[i] = fmaf(x[i], a, y[i]);
  }
}

// Blocks of one full-occupancy wave, as example 09 launches.
template <typename Kernel>
unsigned wave_grid(Kernel kernel, std::size_t n)
{
  int device = 0;
  int sms    = 0;
  int per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlock, 0));
  const std::size_t need = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(sms) * per_sm, need)));
}

// Runs `launch` once on fresh inputs and checks every element against the host, then times it.
template <typename Launch>
void bench(const char* name,
           int items,
           Launch&& launch,
           DeviceBuffer<float>& x,
           DeviceBuffer<float>& y,
           const std::vector<float>& xs,
           const std::vector<float>& ys)
{
  const std::size_t n = xs.size();
  CUDA_CHECK(cudaMemcpy(x.get(), xs.data(), x.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(y.get(), ys.data(), y.bytes(), cudaMemcpyHostToDevice));
  launch();
  CUDA_CHECK_LAUNCH();
  std::vector<float> got(n);
  CUDA_CHECK(cudaMemcpy(got.data(), y.get(), y.bytes(), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n; ++i)
  {
    const float want = std::fmaf(xs[i], kA, ys[i]);
    if (got[i] != want)
    {
      fail("saxpy %s: element %zu is %g, expected %g", name, i, double(got[i]), double(want));
    }
  }
  const double ms = median_ms(launch);
  print_csv_row("saxpy", "f32", name, kBlock, items, gbps(12.0 * double(n), ms));
}

} // namespace

int main(int argc, char** argv)
{
  const std::size_t n = parse_n(argc, argv);
  print_device_info(n);
  std::vector<float> xs(n);
  std::vector<float> ys(n);
  for (std::size_t i = 0; i < n; ++i)
  {
    xs[i] = float(i % 1000) * 0.25f;
    ys[i] = float(i % 77) - 30.0f;
  }
  DeviceBuffer<float> x(n);
  DeviceBuffer<float> y(n);
  DeviceBuffer<float> copy(n);

  print_csv_header();
  const double copy_ms = median_ms([&] {
    CUDA_CHECK(cudaMemcpyAsync(copy.get(), x.get(), x.bytes(), cudaMemcpyDeviceToDevice, 0));
  });
  print_csv_row("memcpy", "f32", "memcpy", 0, 0, gbps(2.0 * double(x.bytes()), copy_ms));

  const unsigned stride_grid = wave_grid(saxpy_grid_stride, n);
  bench(
    "grid_stride",
    kUnroll,
    [&] {
      saxpy_grid_stride<<<stride_grid, kBlock>>>(x.get(), y.get(), kA, n);
    },
    x,
    y,
    xs,
    ys);
  const unsigned all_grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  bench(
    "one_per_thread",
    1,
    [&] {
      saxpy_one_per_thread<<<all_grid, kBlock>>>(x.get(), y.get(), kA, n);
    },
    x,
    y,
    xs,
    ys);
  const unsigned vector_grid = wave_grid(saxpy_float4, n);
  bench(
    "float4",
    4,
    [&] {
      saxpy_float4<<<vector_grid, kBlock>>>(x.get(), y.get(), kA, n);
    },
    x,
    y,
    xs,
    ys);
  return 0;
}
