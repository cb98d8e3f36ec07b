// Shared harness for the CUB reference benchmarks (copy.cu, reduce_scan.cu,
// device.cu).
//
// These programs are a yardstick for coopgraph's own benchmark, which reads
// the CSV they print and reports coopgraph/CUB ratios. Everything here is
// about making those numbers trustworthy: every CUDA call is checked, every
// configuration is validated before it is timed, and the reported time is a
// median of individually timed launches so one slow launch cannot skew it.
#pragma once

#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

namespace cubbench {

// ---------------------------------------------------------------------------
// Error handling
// ---------------------------------------------------------------------------

[[noreturn]] __attribute__((format(printf, 1, 2))) inline void fail(const char* fmt, ...)
{
  std::fflush(stdout);
  std::fprintf(stderr, "error: ");
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::exit(EXIT_FAILURE);
}

inline void check_cuda(cudaError_t err, const char* call, const char* file, int line)
{
  if (err != cudaSuccess)
  {
    fail("%s:%d: %s returned %s (%s)", file, line, call, cudaGetErrorName(err), cudaGetErrorString(err));
  }
}

// Wrap every CUDA runtime call (and every CUB device-wide call, which returns
// cudaError_t too). A failure prints the call's text and exits non-zero.
#define CUDA_CHECK(call) ::cubbench::check_cuda((call), #call, __FILE__, __LINE__)

// A kernel launch reports configuration errors (bad grid, too much shared
// memory, no kernel image for this GPU) only through cudaGetLastError; faults
// during execution surface at the next checked synchronizing call.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

// Owning device allocation of `n` elements of T (RAII, move-only).
template <typename T>
class DeviceBuffer
{
public:
  explicit DeviceBuffer(std::size_t n)
      : n_(n)
  {
    CUDA_CHECK(cudaMalloc(&ptr_, bytes()));
  }
  ~DeviceBuffer()
  {
    if (ptr_ != nullptr)
    {
      CUDA_CHECK(cudaFree(ptr_));
    }
  }
  DeviceBuffer(const DeviceBuffer&)            = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr))
      , n_(std::exchange(other.n_, 0))
  {}
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;

  T* get() const
  {
    return ptr_;
  }
  std::size_t size() const
  {
    return n_;
  }
  std::size_t bytes() const
  {
    return n_ * sizeof(T);
  }

  // Fill with 0xFF bytes: NaN for float, -1 for int. The input generators
  // never produce either, so an element the kernel forgot to write is caught.
  void poison()
  {
    CUDA_CHECK(cudaMemset(ptr_, 0xFF, bytes()));
  }

private:
  T* ptr_ = nullptr;
  std::size_t n_;
};

// Owning page-locked host allocation: reading back 1 GiB results per
// configuration is several times faster from pinned memory, which keeps the
// whole run short. Contents start uninitialised (no 1 GiB zeroing pass).
template <typename T>
class PinnedBuffer
{
public:
  explicit PinnedBuffer(std::size_t n)
      : n_(n)
  {
    CUDA_CHECK(cudaMallocHost(&ptr_, n * sizeof(T)));
  }
  ~PinnedBuffer()
  {
    if (ptr_ != nullptr)
    {
      CUDA_CHECK(cudaFreeHost(ptr_));
    }
  }
  PinnedBuffer(const PinnedBuffer&)            = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* get() const
  {
    return ptr_;
  }
  std::size_t size() const
  {
    return n_;
  }
  T& operator[](std::size_t i) const
  {
    return ptr_[i];
  }

private:
  T* ptr_ = nullptr;
  std::size_t n_;
};

// Copy the first `count` elements of a device buffer into host memory.
template <typename T>
void download(T* host, const DeviceBuffer<T>& dev, std::size_t count)
{
  if (count > dev.size())
  {
    fail("download of %zu elements from a buffer of %zu", count, dev.size());
  }
  CUDA_CHECK(cudaMemcpy(host, dev.get(), count * sizeof(T), cudaMemcpyDeviceToHost));
}

// ---------------------------------------------------------------------------
// Deterministic inputs
// ---------------------------------------------------------------------------

// SplitMix64 finaliser: a cheap, well-mixed hash of the element index, so
// inputs look random (no compressible or cache-friendly pattern, no zeros
// everywhere) yet every run sees the same data.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x)
{
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Element i of the input. float: 24 random bits scaled into [0, 1), so every
// value is exact in float and sums of them are exact in double. int: uniform
// in [0, int_max]; non-negative, so never equal to the -1 poison value, and
// the caller bounds int_max so that no sum it checks overflows int32.
template <typename T>
__host__ __device__ T pattern_value(std::uint64_t i, std::uint64_t seed, int int_max)
{
  const std::uint64_t h = mix64(i ^ (seed << 40));
  if constexpr (std::is_floating_point<T>::value)
  {
    return static_cast<T>(h >> 40) * static_cast<T>(1.0 / 16777216.0);
  }
  else
  {
    return static_cast<T>(h % (static_cast<std::uint64_t>(int_max) + 1));
  }
}

template <typename T>
__global__ void fill_pattern_kernel(T* out, std::size_t n, std::uint64_t seed, int int_max)
{
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
  {
    out[i] = pattern_value<T>(i, seed, int_max);
  }
}

// A grid-stride grid of a few waves: enough to saturate HBM for the helper
// kernels (fill, compare), whose speed is irrelevant to the results.
inline unsigned helper_grid()
{
  int device = 0;
  int sms    = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<unsigned>(sms) * 8u;
}

template <typename T>
void fill_pattern(DeviceBuffer<T>& buf, std::uint64_t seed, int int_max)
{
  fill_pattern_kernel<T><<<helper_grid(), 256>>>(buf.get(), buf.size(), seed, int_max);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

// ---------------------------------------------------------------------------
// Checking
// ---------------------------------------------------------------------------

// Bitwise equality (a float copy must be bit-exact; NaN poison never matches).
template <typename T>
__device__ bool same_bits(T a, T b)
{
  static_assert(sizeof(T) == sizeof(std::uint32_t), "same_bits handles 4-byte types");
  std::uint32_t ua;
  std::uint32_t ub;
  memcpy(&ua, &a, sizeof(T));
  memcpy(&ub, &b, sizeof(T));
  return ua == ub;
}

template <typename T>
__global__ void compare_kernel(
  const T* __restrict__ got, const T* __restrict__ want, std::size_t n, unsigned long long* counters)
{
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
  {
    if (!same_bits(got[i], want[i]))
    {
      atomicAdd(&counters[0], 1ull);
      atomicMin(&counters[1], static_cast<unsigned long long>(i));
    }
  }
}

struct Mismatches
{
  unsigned long long count;
  unsigned long long first_index;
};

// Compares two device arrays on the device, so validating a 1 GiB copy costs
// one extra kernel instead of two host transfers.
class DeviceComparer
{
public:
  DeviceComparer()
      : counters_(2)
  {}

  template <typename T>
  Mismatches compare(const T* got, const T* want, std::size_t n)
  {
    const unsigned long long init[2] = {0ull, ~0ull};
    CUDA_CHECK(cudaMemcpy(counters_.get(), init, sizeof(init), cudaMemcpyHostToDevice));
    compare_kernel<T><<<helper_grid(), 256>>>(got, want, n, counters_.get());
    CUDA_CHECK_LAUNCH();
    unsigned long long result[2];
    CUDA_CHECK(cudaMemcpy(result, counters_.get(), sizeof(result), cudaMemcpyDeviceToHost));
    return Mismatches{result[0], result[1]};
  }

private:
  DeviceBuffer<unsigned long long> counters_;
};

// Host-side comparison of one result against a double/int64 reference.
// Integers must match exactly (callers keep all sums far from int32 limits).
// Floats: relative tolerance, with |ref| floored at 1 so that tiny reference
// values are judged with an absolute tolerance of `rel` instead.
template <typename T>
bool close_enough(T got, double ref, double rel)
{
  if constexpr (std::is_integral<T>::value)
  {
    return static_cast<double>(got) == ref;
  }
  else
  {
    const double g = static_cast<double>(got);
    return std::isfinite(g) && std::fabs(g - ref) <= rel * std::max(std::fabs(ref), 1.0);
  }
}

// ---------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------

constexpr int kWarmupLaunches = 3;
constexpr int kTimedLaunches  = 20;

// Median over kTimedLaunches individually timed launches (CUDA events on the
// default stream, synchronised after each), after kWarmupLaunches untimed
// ones that absorb module loading, clock ramp-up and first-touch costs.
// `launch` must enqueue exactly one operation on the default stream.
template <typename Launch>
double median_ms(Launch&& launch)
{
  cudaEvent_t start;
  cudaEvent_t stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));

  for (int i = 0; i < kWarmupLaunches; ++i)
  {
    launch();
    CUDA_CHECK_LAUNCH();
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> ms(kTimedLaunches);
  for (int i = 0; i < kTimedLaunches; ++i)
  {
    CUDA_CHECK(cudaEventRecord(start, 0));
    launch();
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(stop, 0));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&ms[i], start, stop));
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));

  std::sort(ms.begin(), ms.end());
  const std::size_t mid = ms.size() / 2;
  return ms.size() % 2 == 0 ? 0.5 * (double(ms[mid - 1]) + double(ms[mid])) : double(ms[mid]);
}

// Bytes moved per millisecond -> GB/s (10^9 bytes per second).
inline double gbps(double bytes, double ms)
{
  return bytes / (ms * 1.0e6);
}

// ---------------------------------------------------------------------------
// Configuration plumbing and output
// ---------------------------------------------------------------------------

// Calls f(std::integral_constant<std::size_t, I>{}) for I = 0..N-1, so the
// constexpr configuration tables can be walked at compile time and each entry
// used as a template argument (one kernel instantiation per configuration).
template <typename F, std::size_t... I>
void static_for_impl(F&& f, std::index_sequence<I...>)
{
  (f(std::integral_constant<std::size_t, I>{}), ...);
}

template <std::size_t N, typename F>
void static_for(F&& f)
{
  static_for_impl(f, std::make_index_sequence<N>{});
}

template <typename T>
struct unsupported_dtype : std::false_type
{};

template <typename T>
constexpr const char* dtype_name()
{
  if constexpr (std::is_same<T, float>::value)
  {
    return "f32";
  }
  else if constexpr (std::is_same<T, int>::value)
  {
    return "i32";
  }
  else if constexpr (std::is_same<T, std::uint8_t>::value)
  {
    return "u8";
  }
  else if constexpr (std::is_same<T, std::uint32_t>::value)
  {
    return "u32";
  }
  else if constexpr (std::is_same<T, std::uint64_t>::value)
  {
    return "u64";
  }
  else
  {
    static_assert(unsupported_dtype<T>::value, "unsupported dtype");
    return "";
  }
}

// Which block load/store algorithms stage data through shared memory; a
// kernel that reuses that memory (union of TempStorage) needs a barrier
// between the two uses, the others need none.
__host__ __device__ constexpr bool uses_shared_memory(cub::BlockLoadAlgorithm a)
{
  return a == cub::BLOCK_LOAD_TRANSPOSE || a == cub::BLOCK_LOAD_WARP_TRANSPOSE
      || a == cub::BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED;
}

inline void print_csv_header()
{
  std::printf("kind,dtype,algorithm,block,items,gbps\n");
  std::fflush(stdout);
}

inline void print_csv_row(const char* kind, const char* dtype, const char* algorithm, int block, int items, double gbps)
{
  std::printf("%s,%s,%s,%d,%d,%.2f\n", kind, dtype, algorithm, block, items, gbps);
  std::fflush(stdout);
}

constexpr std::size_t kDefaultN = std::size_t(1) << 28;
// Upper bound keeps per-block offsets and CUB's int num_items in range and
// the integer device-scan reference (inputs <= 3) below 2^31.
constexpr std::size_t kMaxN = std::size_t(1) << 29;

// Element count from argv[1] (default 2^28); rejects anything malformed.
inline std::size_t parse_n(int argc, char** argv)
{
  if (argc > 2)
  {
    fail("usage: %s [n]  (1 <= n <= %zu, default %zu)", argv[0], kMaxN, kDefaultN);
  }
  if (argc < 2)
  {
    return kDefaultN;
  }
  errno                    = 0;
  char* end                = nullptr;
  const unsigned long long v = std::strtoull(argv[1], &end, 10);
  if (errno != 0 || end == argv[1] || *end != '\0' || argv[1][0] == '-' || v < 1 || v > kMaxN)
  {
    fail("invalid n '%s' (want an integer in [1, %zu])", argv[1], kMaxN);
  }
  return static_cast<std::size_t>(v);
}

// Device description on stderr (stdout carries only the CSV).
inline void print_device_info(std::size_t n)
{
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::fprintf(stderr,
               "device %d: %s (sm_%d%d, %d SMs), CUB %d, n = %zu, median of %d launches after %d warm-up\n",
               device,
               prop.name,
               prop.major,
               prop.minor,
               prop.multiProcessorCount,
               CUB_VERSION,
               n,
               kTimedLaunches,
               kWarmupLaunches);
}

} // namespace cubbench
