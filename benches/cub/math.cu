// CUDA C++ reference: f32 exp and sin throughput, with nvcc's accurate functions (expf,
// sinf) and its intrinsics (__expf, __sinf, what -use_fast_math gives), beside coopgraph's
// accurate and fastmath versions in example 15.
//
// Two shapes, one thread per element (256-thread blocks over n / 256 blocks):
//   stream: y[i] = f(x[i])                       (bound by memory: 8 bytes per element)
//   x16:    y[i] = sum over k < 16 of f(x[i] + k / 64)  (bound by the function)
// Inputs x[i] in [-10, 10]: exp stays finite, sin takes the argument reduction's fast path
// (as nvcc's sinf does below 105615). Each kernel's result is checked against the host's
// double-precision functions once before it is timed. Output: CSV on stdout, the `gbps`
// column holding 10^9 function evaluations per second (see README.md).
//
// Usage: cub_math [n]   (default n = 2^28 elements)
#include "common.cuh"

#include <cmath>
#include <vector>

using namespace cubbench;

namespace {

constexpr int kBlock = 256;
constexpr int kEvals = 16;
constexpr float kStep = 1.0f / 64.0f;

struct Exp { __device__ float operator()(float x) const { return expf(x); } };
struct Sin { __device__ float operator()(float x) const { return sinf(x); } };
struct FastExp { __device__ float operator()(float x) const { return __expf(x); } };
struct FastSin { __device__ float operator()(float x) const { return __sinf(x); } };

template <typename F>
__global__ void __launch_bounds__(kBlock) stream(const float* __restrict__ x, float* __restrict__ y, std::size_t n)
{
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
  {
    y[i] = F{}(x[i]);
  }
}

template <typename F>
__global__ void __launch_bounds__(kBlock) x16(const float* __restrict__ x, float* __restrict__ y, std::size_t n)
{
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
  {
    const float v = x[i];
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kEvals; ++k)
    {
      acc += F{}(v + float(k) * kStep);
    }
    y[i] = acc;
  }
}

template <typename F>
void bench(const char* name, double (*reference)(double), double tolerance, int evals, DeviceBuffer<float>& x, DeviceBuffer<float>& y, const std::vector<float>& xs)
{
  const std::size_t n = xs.size();
  const unsigned grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  auto launch = [&] {
    if (evals == 1)
    {
      stream<F><<<grid, kBlock>>>(x.get(), y.get(), n);
    }
    else
    {
      x16<F><<<grid, kBlock>>>(x.get(), y.get(), n);
    }
  };
  launch();
  CUDA_CHECK_LAUNCH();
  std::vector<float> got(n);
  CUDA_CHECK(cudaMemcpy(got.data(), y.get(), y.bytes(), cudaMemcpyDeviceToHost));
  // Every 97th element (the host's reference is slow next to the GPU).
  for (std::size_t i = 0; i < n; i += 97)
  {
    double want = 0.0;
    for (int k = 0; k < evals; ++k)
    {
      want += reference(double(xs[i] + float(k) * kStep));
    }
    // Per evaluation: relative, or absolute below 1 (sums of sines cancel).
    const double scale = std::fmax(std::fabs(want), 1.0);
    if (!(std::fabs(double(got[i]) - want) <= tolerance * evals * scale))
    {
      fail("%s: element %zu (x = %g) is %.9g, expected %.9g", name, i, double(xs[i]), double(got[i]), want);
    }
  }
  const double ms = median_ms(launch);
  print_csv_row("math", "f32", name, kBlock, evals, double(n) * evals / (ms * 1.0e6));
}

} // namespace

int main(int argc, char** argv)
{
  const std::size_t n = parse_n(argc, argv);
  print_device_info(n);
  std::vector<float> xs(n);
  for (std::size_t i = 0; i < n; ++i)
  {
    xs[i] = float(i % 20011) * (20.0f / 20011.0f) - 10.0f;
  }
  DeviceBuffer<float> x(n);
  DeviceBuffer<float> y(n);
  CUDA_CHECK(cudaMemcpy(x.get(), xs.data(), x.bytes(), cudaMemcpyHostToDevice));

  print_csv_header();
  for (int evals : {1, kEvals})
  {
    bench<Exp>("expf", std::exp, 1e-6, evals, x, y, xs);
    bench<Sin>("sinf", std::sin, 1e-6, evals, x, y, xs);
    bench<FastExp>("__expf", std::exp, 1e-5, evals, x, y, xs);
    bench<FastSin>("__sinf", std::sin, 1e-5, evals, x, y, xs);
  }
  return 0;
}
