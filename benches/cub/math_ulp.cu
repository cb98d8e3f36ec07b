// CUDA C++ reference: the accuracy of nvcc's f32 math functions (libdevice, default
// flags: no fast math) over the same arguments as coopgraph's accuracy test
// (tests/all/math.rs `sweep`): special values, then `n` arguments spread over every float
// by their bits (both signs), then `n` spread linearly over the range where the function
// varies. The reference is the host's double-precision function; the error of a result is
// |got - exact| in ulps of the f32 binade of the exact value, as that test measures it
// (NaN must meet NaN, an infinity must be the rounded reference).
//
// Output: CSV on stdout, one line per function:
//
//   kind,function,n,max_ulp,at
//
// Usage: cub_math_ulp [n]   (default 8192, the test's; the GPU run uses 2^20)
#include "common.cuh"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace cubbench;

namespace {

enum Fn { kExp, kExp2, kExp10, kExpm1, kLog, kLog2, kLog10, kLog1p, kSin, kCos, kTan, kAsin,
          kAcos, kAtan, kSinh, kCosh, kTanh, kCbrt, kErf, kErfc, kRsqrt, kCount };

struct Spec
{
  const char* name;
  double (*reference)(double);
  double lo, hi;
};

double rsqrt_ref(double x) { return 1.0 / std::sqrt(x); }
double exp10_ref(double x) { return std::pow(10.0, x); }

const Spec kSpecs[kCount] = {
  {"exp", [](double x) { return std::exp(x); }, -104.0, 89.0},
  {"exp2", [](double x) { return std::exp2(x); }, -151.0, 129.0},
  {"exp10", exp10_ref, -46.0, 39.0},
  {"exp_m1", [](double x) { return std::expm1(x); }, -20.0, 89.0},
  {"ln", [](double x) { return std::log(x); }, 0.0, 4.0},
  {"log2", [](double x) { return std::log2(x); }, 0.0, 4.0},
  {"log10", [](double x) { return std::log10(x); }, 0.0, 4.0},
  {"ln_1p", [](double x) { return std::log1p(x); }, -1.0, 4.0},
  {"sin", [](double x) { return std::sin(x); }, -20.0, 20.0},
  {"cos", [](double x) { return std::cos(x); }, -20.0, 20.0},
  {"tan", [](double x) { return std::tan(x); }, -20.0, 20.0},
  {"asin", [](double x) { return std::asin(x); }, -1.0, 1.0},
  {"acos", [](double x) { return std::acos(x); }, -1.0, 1.0},
  {"atan", [](double x) { return std::atan(x); }, -8.0, 8.0},
  {"sinh", [](double x) { return std::sinh(x); }, -90.0, 90.0},
  {"cosh", [](double x) { return std::cosh(x); }, -90.0, 90.0},
  {"tanh", [](double x) { return std::tanh(x); }, -10.0, 10.0},
  {"cbrt", [](double x) { return std::cbrt(x); }, -8.0, 8.0},
  {"erf", [](double x) { return std::erf(x); }, -5.0, 5.0},
  {"erfc", [](double x) { return std::erfc(x); }, -5.0, 11.0},
  {"rsqrt", rsqrt_ref, 0.0, 4.0},
};

__device__ float apply(int f, float x)
{
  switch (f)
  {
    case kExp: return expf(x);
    case kExp2: return exp2f(x);
    case kExp10: return exp10f(x);
    case kExpm1: return expm1f(x);
    case kLog: return logf(x);
    case kLog2: return log2f(x);
    case kLog10: return log10f(x);
    case kLog1p: return log1pf(x);
    case kSin: return sinf(x);
    case kCos: return cosf(x);
    case kTan: return tanf(x);
    case kAsin: return asinf(x);
    case kAcos: return acosf(x);
    case kAtan: return atanf(x);
    case kSinh: return sinhf(x);
    case kCosh: return coshf(x);
    case kTanh: return tanhf(x);
    case kCbrt: return cbrtf(x);
    case kErf: return erff(x);
    case kErfc: return erfcf(x);
    default: return rsqrtf(x);
  }
}

__global__ void eval(int f, const float* __restrict__ x, float* __restrict__ y, int n)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
  {
    y[i] = apply(f, x[i]);
  }
}

float from_bits(uint32_t b)
{
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// The test's sweep, value for value.
std::vector<float> sweep(double lo, double hi, uint32_t n)
{
  const float inf = INFINITY, mn = 1.17549435e-38f, mx = 3.40282347e+38f;
  std::vector<float> xs = {0.0f, -0.0f, inf, -inf, NAN, mn, -mn, 1e-45f, -1e-45f, mx, -mx,
                           1.0f, -1.0f, 0.5f, -0.5f};
  uint32_t step = uint32_t(0x7f800000u / n);
  step = step < 1 ? 1 : step;
  for (uint32_t i = 0; i < n; ++i)
  {
    uint32_t b = i * step + i % 7;
    const float x = from_bits(b < 0x7f7fffffu ? b : 0x7f7fffffu);
    xs.push_back(i % 2 == 0 ? x : -x);
  }
  for (uint32_t i = 0; i < n; ++i)
  {
    const double t = double(i) / double(n);
    xs.push_back(float(lo + (hi - lo) * t));
  }
  return xs;
}

double ulps(float got, double want)
{
  if (std::isnan(want) || std::isnan(got))
  {
    return std::isnan(want) && std::isnan(got) ? 0.0 : INFINITY;
  }
  const float rounded = float(want);
  if (std::isinf(rounded) || std::isinf(got))
  {
    return got == rounded ? 0.0 : INFINITY;
  }
  const double e = std::floor(std::log2(std::fmax(std::fabs(want), double(1.17549435e-38f))));
  const double ulp = std::pow(2.0, e - 23.0);
  return std::fabs(double(got) - want) / ulp;
}

} // namespace

int main(int argc, char** argv)
{
  const long n = argc > 1 ? std::atol(argv[1]) : 8192;
  if (n <= 0 || n > (1L << 26))
  {
    fail("usage: cub_math_ulp [n in 1..2^26]");
  }
  std::printf("kind,function,n,max_ulp,at\n");
  for (int f = 0; f < kCount; ++f)
  {
    const Spec& s = kSpecs[f];
    const std::vector<float> xs = sweep(s.lo, s.hi, uint32_t(n));
    const int len = int(xs.size());
    DeviceBuffer<float> x(len), y(len);
    CUDA_CHECK(cudaMemcpy(x.get(), xs.data(), len * sizeof(float), cudaMemcpyHostToDevice));
    eval<<<(len + 255) / 256, 256>>>(f, x.get(), y.get(), len);
    CUDA_CHECK_LAUNCH();
    std::vector<float> got(len);
    CUDA_CHECK(cudaMemcpy(got.data(), y.get(), len * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0.0;
    float at = 0.0f;
    for (int i = 0; i < len; ++i)
    {
      const double e = ulps(got[i], s.reference(double(xs[i])));
      if (e > worst)
      {
        worst = e;
        at = xs[i];
      }
    }
    std::printf("math_ulp,%s,%ld,%.3f,%.8e\n", s.name, n, worst, double(at));
  }
  return 0;
}
