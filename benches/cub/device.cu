// CUB reference: device-wide algorithms.
//
//   device_histogram          cub::DeviceHistogram::HistogramEven, 256 bins,
//                             u8 and f32 samples
//   device_select             cub::DeviceSelect::If, u32 (x % 2 == 0) and
//                             f32 (x > 0.5); algorithm "if_30pct": u32
//                             (x % 10 < 3, about 30% kept)
//   device_partition          cub::DevicePartition::If, same inputs and
//                             predicates
//   device_radix_sort         cub::DeviceRadixSort::SortKeys (u32, u64, f32)
//                             and SortPairs (u32 keys, u32 values); the
//                             device_radix_sort_gkeys rows give the same runs
//                             in 10^9 keys per second
//   device_run_length_encode  cub::DeviceRunLengthEncode::Encode, u32 runs of
//                             length 1..16
//   device_segmented_reduce   cub::DeviceSegmentedReduce::Sum, f32,
//                             1024-element segments
//   device_scan               cub::DeviceScan::ExclusiveSum and InclusiveScan
//                             with cuda::maximum, i32; InclusiveSum, i32, u32,
//                             f32 and u64
//   device_reduce             cub::DeviceReduce::Sum, i32, u32, f32 and u64
//
// Each algorithm is called the documented two-phase way: a null-pointer call
// sizes the scratch, which is allocated once per configuration; only the
// algorithm call itself is timed. Every configuration is validated against a
// host reference before it is timed. Output: CSV on stdout (see README.md).
//
// Usage: cub_device [n]   (default n = 2^28 elements; CUB_DEVICE_ONLY=sort,scan
// runs only those families; sort_keys and sort_pairs split the sorts)
#include "common.cuh"

#include <cuda/functional>

#include <climits>
#include <cstdlib>
#include <string>

using namespace cubbench;

namespace {

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

// Every bit of a hash of (i, seed): uniform over the whole range of an
// integer type (u8 histogram samples, u32/u64 sort keys, i32 max-scan input).
template <typename T>
struct RandomBits
{
  std::uint64_t seed;
  __host__ __device__ T operator()(std::uint64_t i) const
  {
    static_assert(std::is_integral<T>::value, "RandomBits makes integers");
    // Through the unsigned type of the same width: the conversion to a
    // signed T is then a plain reinterpretation of the low bits.
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(mix64(i ^ (seed << 40))));
  }
};

// common.cuh's pattern: f32 in [0, 1) with 24 random bits, ints in [0, int_max].
template <typename T>
struct Pattern
{
  std::uint64_t seed;
  int int_max;
  __host__ __device__ T operator()(std::uint64_t i) const
  {
    return pattern_value<T>(i, seed, int_max);
  }
};

// The element's own index: sort values that identify where each key came from.
struct Index
{
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const
  {
    return static_cast<std::uint32_t>(i);
  }
};

template <typename T, typename Gen>
__global__ void fill_kernel(T* out, std::size_t n, Gen gen)
{
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
  {
    out[i] = gen(i);
  }
}

template <typename T, typename Gen>
void fill(DeviceBuffer<T>& buf, Gen gen)
{
  fill_kernel<T, Gen><<<helper_grid(), 256>>>(buf.get(), buf.size(), gen);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

template <typename T>
void upload(DeviceBuffer<T>& dev, const T* host, std::size_t count)
{
  if (count > dev.size())
  {
    fail("upload of %zu elements into a buffer of %zu", count, dev.size());
  }
  CUDA_CHECK(cudaMemcpy(dev.get(), host, count * sizeof(T), cudaMemcpyHostToDevice));
}

// Distinct seeds per input so no two configurations see the same data.
constexpr std::uint64_t kSeedHistogramU8  = 0xD1;
constexpr std::uint64_t kSeedHistogramF32 = 0xD2;
constexpr std::uint64_t kSeedSelectU32    = 0xD3;
constexpr std::uint64_t kSeedSelectF32    = 0xD4;
constexpr std::uint64_t kSeedSortU32      = 0xD5;
constexpr std::uint64_t kSeedSortU64      = 0xD6;
constexpr std::uint64_t kSeedSortF32      = 0xD7;
constexpr std::uint64_t kSeedRuns         = 0xD8;
constexpr std::uint64_t kSeedSegments     = 0xD9;
constexpr std::uint64_t kSeedExclusiveSum = 0xDA;
constexpr std::uint64_t kSeedMaxScan      = 0xDB;
constexpr std::uint64_t kSeedInclusiveSum = 0xDC;
constexpr std::uint64_t kSeedReduceSum    = 0xDD;

// ---------------------------------------------------------------------------
// Calling CUB and checking results
// ---------------------------------------------------------------------------

// One CUB device-wide algorithm with its scratch. `call(temp, bytes)` invokes
// the algorithm; the constructor makes the sizing call (null scratch), then
// allocates the scratch once, and run() makes the real call, which is what
// gets timed. Every call's status is checked and reported under `name`.
template <typename Call>
class DeviceCall
{
public:
  DeviceCall(const char* name, Call call)
      : name_(name)
      , call_(std::move(call))
      , temp_(query_temp_bytes())
  {}

  void run()
  {
    check_cuda(call_(temp_.get(), temp_bytes_), name_, __FILE__, __LINE__);
  }

private:
  std::size_t query_temp_bytes()
  {
    temp_bytes_ = 0;
    check_cuda(call_(nullptr, temp_bytes_), name_, __FILE__, __LINE__);
    return std::max<std::size_t>(temp_bytes_, 1);
  }

  // Declaration order is initialisation order: temp_ is sized from the
  // members above it.
  const char* name_;
  Call call_;
  std::size_t temp_bytes_ = 0;
  DeviceBuffer<unsigned char> temp_;
};

template <typename Call>
DeviceCall<Call> device_call(const char* name, Call call)
{
  return DeviceCall<Call>(name, std::move(call));
}

// Runs the call once for validation: the caller has poisoned the outputs.
template <typename Call>
void run_once(DeviceCall<Call>& call)
{
  call.run();
  CUDA_CHECK(cudaDeviceSynchronize());
}

template <typename Call>
double time_call(DeviceCall<Call>& call)
{
  return median_ms([&] { call.run(); });
}

// Count per millisecond -> 10^9 per second (sort rows in keys per second).
double giga_per_s(double count, double ms)
{
  return count / (ms * 1.0e6);
}

template <typename T>
bool bit_equal(T a, T b)
{
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// A value as failure messages print it: integers exactly, floats to 9 digits.
template <typename T>
std::string show(T v)
{
  char buf[64];
  if constexpr (std::is_floating_point<T>::value)
  {
    std::snprintf(buf, sizeof(buf), "%.9g", double(v));
  }
  else if constexpr (std::is_signed<T>::value)
  {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v));
  }
  else
  {
    std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(v));
  }
  return buf;
}

// Fails unless got[i] has the bits of want(i) for every i < count.
template <typename T, typename Want>
void expect_elements(const std::string& what, const T* got, std::size_t count, Want want)
{
  for (std::size_t i = 0; i < count; ++i)
  {
    const T w = want(i);
    if (!bit_equal(got[i], w))
    {
      fail("%s: element %zu is %s, expected %s", what.c_str(), i, show(got[i]).c_str(), show(w).c_str());
    }
  }
}

// A count written by the device (number selected, number of runs).
void expect_count(const std::string& what, const DeviceBuffer<int>& dev, std::size_t want)
{
  int got = 0;
  download(&got, dev, 1);
  if (got < 0 || static_cast<std::size_t>(got) != want)
  {
    fail("%s: count is %d, expected %zu", what.c_str(), got, want);
  }
}

template <typename T>
std::string label(const char* kind, const char* algorithm)
{
  return std::string(kind) + " " + dtype_name<T>() + " " + algorithm;
}

// ---------------------------------------------------------------------------
// Histogram
// ---------------------------------------------------------------------------

constexpr int kBins = 256;

// Even levels over the sample's range: u8 [0, 256) so bin = value; f32
// [0, 1) so bin = floor(256 * x). Both bin widths are powers of two, so
// CUB's float (x - lower) * 256 is exact and the host bin must match it.
template <typename T>
struct HistogramLevels;

template <>
struct HistogramLevels<std::uint8_t>
{
  using Level                  = int;
  static constexpr Level lower = 0;
  static constexpr Level upper = kBins;
  static int bin(std::uint8_t x)
  {
    return x;
  }
};

template <>
struct HistogramLevels<float>
{
  using Level                  = float;
  static constexpr Level lower = 0.0f;
  static constexpr Level upper = 1.0f;
  static int bin(float x)
  {
    return static_cast<int>(x * float(kBins));
  }
};

template <typename T, typename Gen>
void bench_histogram(std::size_t n, Gen gen)
{
  using Levels = HistogramLevels<T>;
  DeviceBuffer<T> samples(n);
  DeviceBuffer<int> histogram(kBins);
  fill(samples, gen);
  PinnedBuffer<T> host(n);
  download(host.get(), samples, n);

  const int num_samples = static_cast<int>(n);
  auto call = device_call("cub::DeviceHistogram::HistogramEven", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceHistogram::HistogramEven(
      temp, bytes, samples.get(), histogram.get(), kBins + 1, Levels::lower, Levels::upper, num_samples);
  });

  histogram.poison();
  run_once(call);
  int got[kBins];
  download(got, histogram, kBins);
  std::vector<int> want(kBins, 0);
  for (std::size_t i = 0; i < n; ++i)
  {
    const int b = Levels::bin(host[i]);
    if (b < 0 || b >= kBins)
    {
      fail("histogram %s: sample %zu (%s) lies outside the levels", dtype_name<T>(), i, show(host[i]).c_str());
    }
    ++want[b];
  }
  expect_elements(label<T>("device_histogram", "histogram_even"), got, kBins, [&](std::size_t b) {
    return want[b];
  });

  const double ms = time_call(call);
  print_csv_row("device_histogram", dtype_name<T>(), "histogram_even", 0, 0, gbps(double(n) * sizeof(T), ms));
}

// ---------------------------------------------------------------------------
// Select and partition
// ---------------------------------------------------------------------------

struct IsEven
{
  __host__ __device__ bool operator()(std::uint32_t x) const
  {
    return x % 2 == 0;
  }
};

// Keeps about 30% of uniformly random words.
struct Below3Mod10
{
  __host__ __device__ bool operator()(std::uint32_t x) const
  {
    return x % 10 < 3;
  }
};

struct AboveHalf
{
  __host__ __device__ bool operator()(float x) const
  {
    return x > 0.5f;
  }
};

// DeviceSelect::If and DevicePartition::If on the same input. Select keeps
// the selected elements, in input order, at the front of its output;
// partition does the same and puts the rejected ones at the back in reverse
// input order (CUB's documented layout). Both write the number selected.
// `alg` names the rows' predicate column ("if" for the original rows).
template <typename T, typename Gen, typename Pred>
void bench_select_partition(std::size_t n, Gen gen, Pred pred, const char* alg = "if")
{
  DeviceBuffer<T> in(n);
  DeviceBuffer<T> out(n);
  DeviceBuffer<int> count(1);
  fill(in, gen);
  PinnedBuffer<T> host_in(n);
  PinnedBuffer<T> host_out(n);
  download(host_in.get(), in, n);

  std::vector<T> selected;
  std::vector<T> rejected;
  for (std::size_t i = 0; i < n; ++i)
  {
    (pred(host_in[i]) ? selected : rejected).push_back(host_in[i]);
  }
  const std::size_t k = selected.size();
  const int num_items = static_cast<int>(n);

  {
    auto call = device_call("cub::DeviceSelect::If", [&](void* temp, std::size_t& bytes) {
      return cub::DeviceSelect::If(temp, bytes, in.get(), out.get(), count.get(), num_items, pred);
    });
    const std::string what = label<T>("device_select", alg);
    out.poison();
    count.poison();
    run_once(call);
    expect_count(what, count, k);
    download(host_out.get(), out, k);
    expect_elements(what, host_out.get(), k, [&](std::size_t i) {
      return selected[i];
    });

    const double ms    = time_call(call);
    const double bytes = double(n) * sizeof(T) + double(k) * sizeof(T) + sizeof(int);
    print_csv_row("device_select", dtype_name<T>(), alg, 0, 0, gbps(bytes, ms));
  }
  {
    auto call = device_call("cub::DevicePartition::If", [&](void* temp, std::size_t& bytes) {
      return cub::DevicePartition::If(temp, bytes, in.get(), out.get(), count.get(), num_items, pred);
    });
    const std::string what = label<T>("device_partition", alg);
    out.poison();
    count.poison();
    run_once(call);
    expect_count(what, count, k);
    download(host_out.get(), out, n);
    expect_elements(what, host_out.get(), n, [&](std::size_t i) {
      return i < k ? selected[i] : rejected[n - 1 - i];
    });

    const double ms    = time_call(call);
    const double bytes = 2.0 * double(n) * sizeof(T) + sizeof(int);
    print_csv_row("device_partition", dtype_name<T>(), alg, 0, 0, gbps(bytes, ms));
  }
}

// ---------------------------------------------------------------------------
// Radix sort
// ---------------------------------------------------------------------------

// Prints a sort's two rows: GB/s counting every key (and value) read once
// and written once, as CUB's own sort benchmarks do, and 10^9 keys/s.
template <typename K>
void print_sort_rows(const char* algorithm, std::size_t n, std::size_t bytes_per_item, double ms)
{
  print_csv_row("device_radix_sort", dtype_name<K>(), algorithm, 0, 0, gbps(2.0 * double(n) * bytes_per_item, ms));
  print_csv_row("device_radix_sort_gkeys", dtype_name<K>(), algorithm, 0, 0, giga_per_s(double(n), ms));
}

// SortKeys from `in` to `out` (full key width), checked against want(i).
template <typename K, typename Want>
void bench_sort_keys(const DeviceBuffer<K>& in, DeviceBuffer<K>& out, PinnedBuffer<K>& host_out, Want want)
{
  const std::size_t n = in.size();
  const int num_items = static_cast<int>(n);
  auto call           = device_call("cub::DeviceRadixSort::SortKeys", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceRadixSort::SortKeys(temp, bytes, in.get(), out.get(), num_items);
  });
  out.poison();
  run_once(call);
  download(host_out.get(), out, n);
  expect_elements(label<K>("device_radix_sort", "sort_keys"), host_out.get(), n, want);

  print_sort_rows<K>("sort_keys", n, sizeof(K), time_call(call));
}

// u32 keys: SortKeys (when `keys`), then SortPairs with each key's index as its
// value (when `pairs`). One
// host std::sort of (key << 32 | index) is the reference for both: its high
// halves are the sorted keys and, because CUB's radix sort is stable, its
// low halves are exactly the values SortPairs must produce.
void bench_sort_u32(std::size_t n, bool keys, bool pairs)
{
  using K = std::uint32_t;
  DeviceBuffer<K> keys_in(n);
  DeviceBuffer<K> keys_out(n);
  DeviceBuffer<std::uint32_t> values_in(n);
  DeviceBuffer<std::uint32_t> values_out(n);
  fill(keys_in, RandomBits<K>{kSeedSortU32});
  fill(values_in, Index{});
  PinnedBuffer<K> host(n);
  download(host.get(), keys_in, n);
  std::vector<std::uint64_t> want(n);
  for (std::size_t i = 0; i < n; ++i)
  {
    want[i] = (std::uint64_t(host[i]) << 32) | i;
  }
  std::sort(want.begin(), want.end());
  const auto want_key   = [&](std::size_t i) { return static_cast<K>(want[i] >> 32); };
  const auto want_value = [&](std::size_t i) { return static_cast<std::uint32_t>(want[i]); };

  if (keys)
  {
    bench_sort_keys(keys_in, keys_out, host, want_key);
  }
  if (!pairs)
  {
    return;
  }

  const int num_items = static_cast<int>(n);
  auto call           = device_call("cub::DeviceRadixSort::SortPairs", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(
      temp, bytes, keys_in.get(), keys_out.get(), values_in.get(), values_out.get(), num_items);
  });
  const std::string what = label<K>("device_radix_sort", "sort_pairs");
  keys_out.poison();
  values_out.poison();
  run_once(call);
  download(host.get(), keys_out, n);
  expect_elements(what + " keys", host.get(), n, want_key);
  static_assert(sizeof(K) == sizeof(std::uint32_t), "the key buffer doubles as the value buffer");
  download(host.get(), values_out, n);
  expect_elements(what + " values", host.get(), n, want_value);

  print_sort_rows<K>("sort_pairs", n, sizeof(K) + sizeof(std::uint32_t), time_call(call));
}

// u64 and f32 keys: the reference is std::sort of the input. The f32 input
// lies in [0, 1) (no NaN, no -0.0), where std::sort's order is CUB's and
// equal keys have equal bits.
template <typename K, typename Gen>
void bench_sort(std::size_t n, Gen gen)
{
  DeviceBuffer<K> in(n);
  DeviceBuffer<K> out(n);
  fill(in, gen);
  PinnedBuffer<K> want(n);
  PinnedBuffer<K> host_out(n);
  download(want.get(), in, n);
  std::sort(want.get(), want.get() + n);
  bench_sort_keys(in, out, host_out, [&](std::size_t i) { return want[i]; });
}

// ---------------------------------------------------------------------------
// Run-length encode
// ---------------------------------------------------------------------------

constexpr int kMaxRunLength = 16;

void bench_run_length_encode(std::size_t n)
{
  using T = std::uint32_t;
  // Runs of hashed lengths in [1, kMaxRunLength] (the last one cut at n),
  // each value different from the one before, so every run is its own.
  PinnedBuffer<T> host_in(n);
  {
    std::size_t i = 0;
    T previous    = 0;
    for (std::uint64_t r = 0; i < n; ++r)
    {
      const std::uint64_t h = mix64(r ^ (kSeedRuns << 40));
      T value               = static_cast<T>(h >> 32);
      if (r > 0 && value == previous)
      {
        value ^= 1u;
      }
      const std::size_t end = std::min(n, i + 1 + static_cast<std::size_t>(h % kMaxRunLength));
      for (; i < end; ++i)
      {
        host_in[i] = value;
      }
      previous = value;
    }
  }
  DeviceBuffer<T> in(n);
  upload(in, host_in.get(), n);

  // The reference encodes what is actually there, independently of how it
  // was made.
  std::vector<T> want_unique;
  std::vector<int> want_counts;
  for (std::size_t i = 0; i < n; ++i)
  {
    if (i == 0 || host_in[i] != host_in[i - 1])
    {
      want_unique.push_back(host_in[i]);
      want_counts.push_back(0);
    }
    ++want_counts.back();
  }
  const std::size_t runs = want_unique.size();

  DeviceBuffer<T> unique(n);
  DeviceBuffer<int> counts(n);
  DeviceBuffer<int> num_runs(1);
  const int num_items = static_cast<int>(n);
  auto call = device_call("cub::DeviceRunLengthEncode::Encode", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceRunLengthEncode::Encode(
      temp, bytes, in.get(), unique.get(), counts.get(), num_runs.get(), num_items);
  });
  const std::string what = label<T>("device_run_length_encode", "encode");
  unique.poison();
  counts.poison();
  num_runs.poison();
  run_once(call);
  expect_count(what + " runs", num_runs, runs);
  std::vector<T> got_unique(runs);
  std::vector<int> got_counts(runs);
  download(got_unique.data(), unique, runs);
  download(got_counts.data(), counts, runs);
  expect_elements(what + " unique", got_unique.data(), runs, [&](std::size_t r) { return want_unique[r]; });
  expect_elements(what + " counts", got_counts.data(), runs, [&](std::size_t r) { return want_counts[r]; });

  const double ms    = time_call(call);
  const double bytes = double(n) * sizeof(T) + double(runs) * (sizeof(T) + sizeof(int)) + sizeof(int);
  print_csv_row("device_run_length_encode", dtype_name<T>(), "encode", 0, 0, gbps(bytes, ms));
}

// ---------------------------------------------------------------------------
// Segmented reduce
// ---------------------------------------------------------------------------

constexpr std::size_t kSegment = 1024;
// Sums of at most 1024 values in [0, 1): float rounding stays far below this.
constexpr double kSegmentedRelTol = 1e-4;

void bench_segmented_reduce(std::size_t n)
{
  using T                     = float;
  const std::size_t segments  = (n + kSegment - 1) / kSegment;
  DeviceBuffer<T> in(n);
  DeviceBuffer<T> out(segments);
  DeviceBuffer<int> offsets(segments + 1);
  fill(in, Pattern<T>{kSeedSegments, 0});
  PinnedBuffer<T> host_in(n);
  download(host_in.get(), in, n);
  // Segment s is [offsets[s], offsets[s + 1]); the last one may be short.
  std::vector<int> host_offsets(segments + 1);
  for (std::size_t s = 0; s <= segments; ++s)
  {
    host_offsets[s] = static_cast<int>(std::min(s * kSegment, n));
  }
  upload(offsets, host_offsets.data(), segments + 1);

  auto call = device_call("cub::DeviceSegmentedReduce::Sum", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceSegmentedReduce::Sum(
      temp, bytes, in.get(), out.get(), static_cast<std::int64_t>(segments), offsets.get(), offsets.get() + 1);
  });
  out.poison();
  run_once(call);
  std::vector<T> got(segments);
  download(got.data(), out, segments);
  for (std::size_t s = 0; s < segments; ++s)
  {
    double want = 0.0; // exact: 24-bit values, at most 1024 of them
    for (int i = host_offsets[s]; i < host_offsets[s + 1]; ++i)
    {
      want += host_in[i];
    }
    if (!close_enough(got[s], want, kSegmentedRelTol))
    {
      fail("device_segmented_reduce f32 sum: segment %zu is %.9g, expected %.9g", s, double(got[s]), want);
    }
  }

  const double ms = time_call(call);
  // Input once, the offsets array once, one sum per segment.
  const double bytes = double(n) * sizeof(T) + double(segments + 1) * sizeof(int) + double(segments) * sizeof(T);
  print_csv_row("device_segmented_reduce", dtype_name<T>(), "sum", 0, 0, gbps(bytes, ms));
}

// ---------------------------------------------------------------------------
// Scans
// ---------------------------------------------------------------------------

// Inputs in [0, 3], as in reduce_scan.cu: n * 3 < 2^31 for every allowed n,
// so the int32 exclusive sum never overflows and must match exactly.
constexpr int kExclusiveSumIntMax = 3;

void bench_exclusive_sum(std::size_t n)
{
  using T = int;
  DeviceBuffer<T> in(n);
  DeviceBuffer<T> out(n);
  fill(in, Pattern<T>{kSeedExclusiveSum, kExclusiveSumIntMax});
  PinnedBuffer<T> host_in(n);
  PinnedBuffer<T> host_out(n);
  download(host_in.get(), in, n);

  const int num_items = static_cast<int>(n);
  auto call           = device_call("cub::DeviceScan::ExclusiveSum", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, in.get(), out.get(), num_items);
  });
  out.poison();
  run_once(call);
  download(host_out.get(), out, n);
  long long acc = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    if (host_out[i] != acc)
    {
      fail("device_scan i32 exclusive_sum: element %zu is %d, expected %lld", i, host_out[i], acc);
    }
    acc += host_in[i];
  }

  const double ms = time_call(call);
  print_csv_row("device_scan", dtype_name<T>(), "exclusive_sum", 0, 0, gbps(2.0 * double(n) * sizeof(T), ms));
}

// Inclusive max-scan over the full int32 range, negatives included, so a
// scan that started from 0 (or any value other than the first element)
// instead of the first element shows.
void bench_inclusive_max(std::size_t n)
{
  using T = int;
  DeviceBuffer<T> in(n);
  DeviceBuffer<T> out(n);
  fill(in, RandomBits<T>{kSeedMaxScan});
  PinnedBuffer<T> host_in(n);
  PinnedBuffer<T> host_out(n);
  download(host_in.get(), in, n);

  const int num_items = static_cast<int>(n);
  auto call           = device_call("cub::DeviceScan::InclusiveScan", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::InclusiveScan(temp, bytes, in.get(), out.get(), cuda::maximum<>{}, num_items);
  });
  out.poison();
  run_once(call);
  download(host_out.get(), out, n);
  T acc = INT_MIN;
  for (std::size_t i = 0; i < n; ++i)
  {
    acc = std::max(acc, host_in[i]);
    if (host_out[i] != acc)
    {
      fail("device_scan i32 inclusive_scan_max: element %zu is %d, expected %d", i, host_out[i], acc);
    }
  }

  const double ms = time_call(call);
  print_csv_row("device_scan", dtype_name<T>(), "inclusive_scan_max", 0, 0, gbps(2.0 * double(n) * sizeof(T), ms));
}

// Inclusive sums: integers in [0, 3] (exact: n * 3 < 2^31 for every allowed
// n), f32 in [0, 1), checked against a double running sum with a relative
// tolerance for the float's own rounding.
constexpr double kScanF32RelTol = 1e-3;

template <typename T>
void bench_inclusive_sum(std::size_t n)
{
  DeviceBuffer<T> in(n);
  DeviceBuffer<T> out(n);
  fill(in, Pattern<T>{kSeedInclusiveSum, kExclusiveSumIntMax});
  PinnedBuffer<T> host_in(n);
  PinnedBuffer<T> host_out(n);
  download(host_in.get(), in, n);

  const int num_items = static_cast<int>(n);
  auto call           = device_call("cub::DeviceScan::InclusiveSum", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::InclusiveSum(temp, bytes, in.get(), out.get(), num_items);
  });
  out.poison();
  run_once(call);
  download(host_out.get(), out, n);
  double acc = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    acc += static_cast<double>(host_in[i]);
    if (!close_enough(host_out[i], acc, kScanF32RelTol))
    {
      fail("device_scan %s inclusive_sum: element %zu is %.9g, expected %.9g", dtype_name<T>(), i,
           static_cast<double>(host_out[i]), acc);
    }
  }

  const double ms = time_call(call);
  print_csv_row("device_scan", dtype_name<T>(), "inclusive_sum", 0, 0, gbps(2.0 * double(n) * sizeof(T), ms));
}

// Sums of the same inputs; GB/s counts the input read once.
constexpr double kReduceF32RelTol = 1e-4;

template <typename T>
void bench_reduce_sum(std::size_t n)
{
  DeviceBuffer<T> in(n);
  DeviceBuffer<T> out(1);
  fill(in, Pattern<T>{kSeedReduceSum, kExclusiveSumIntMax});
  PinnedBuffer<T> host_in(n);
  PinnedBuffer<T> host_out(1);
  download(host_in.get(), in, n);

  const int num_items = static_cast<int>(n);
  auto call           = device_call("cub::DeviceReduce::Sum", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceReduce::Sum(temp, bytes, in.get(), out.get(), num_items);
  });
  out.poison();
  run_once(call);
  download(host_out.get(), out, 1);
  double want = 0;
  for (std::size_t i = 0; i < n; ++i)
  {
    want += static_cast<double>(host_in[i]);
  }
  if (!close_enough(host_out[0], want, kReduceF32RelTol))
  {
    fail("device_reduce %s sum: %.9g, expected %.9g", dtype_name<T>(), static_cast<double>(host_out[0]), want);
  }

  const double ms = time_call(call);
  print_csv_row("device_reduce", dtype_name<T>(), "sum", 0, 0, gbps(double(n) * sizeof(T), ms));
}

// True when `family` is to run: every family unless CUB_DEVICE_ONLY names a
// comma-separated list of them (histogram, select, sort, run_length_encode,
// segmented_reduce, scan, reduce), as a profiling run of one algorithm wants.
// "sort" is every sort; "sort_keys" is the three key-only sorts and
// "sort_pairs" the u32 pairs alone (so a profiler's first kernels are its own).
bool wanted(const char* family)
{
  const char* only = std::getenv("CUB_DEVICE_ONLY");
  if (only == nullptr || *only == '\0')
  {
    return true;
  }
  const std::string list = std::string(",") + only + ",";
  return list.find(std::string(",") + family + ",") != std::string::npos;
}

} // namespace

int main(int argc, char** argv)
{
  const std::size_t n = parse_n(argc, argv);
  print_device_info(n);
  print_csv_header();

  if (wanted("histogram"))
  {
    bench_histogram<std::uint8_t>(n, RandomBits<std::uint8_t>{kSeedHistogramU8});
    bench_histogram<float>(n, Pattern<float>{kSeedHistogramF32, 0});
  }
  if (wanted("select"))
  {
    bench_select_partition<std::uint32_t>(n, RandomBits<std::uint32_t>{kSeedSelectU32}, IsEven{});
    bench_select_partition<std::uint32_t>(
      n, RandomBits<std::uint32_t>{kSeedSelectU32}, Below3Mod10{}, "if_30pct");
    bench_select_partition<float>(n, Pattern<float>{kSeedSelectF32, 0}, AboveHalf{});
  }
  const bool sort_keys  = wanted("sort") || wanted("sort_keys");
  const bool sort_pairs = wanted("sort") || wanted("sort_pairs");
  if (sort_keys || sort_pairs)
  {
    bench_sort_u32(n, sort_keys, sort_pairs);
  }
  if (sort_keys)
  {
    bench_sort<std::uint64_t>(n, RandomBits<std::uint64_t>{kSeedSortU64});
    bench_sort<float>(n, Pattern<float>{kSeedSortF32, 0});
  }
  if (wanted("run_length_encode"))
  {
    bench_run_length_encode(n);
  }
  if (wanted("segmented_reduce"))
  {
    bench_segmented_reduce(n);
  }
  if (wanted("scan"))
  {
    bench_exclusive_sum(n);
    bench_inclusive_max(n);
    bench_inclusive_sum<int>(n);
    bench_inclusive_sum<std::uint32_t>(n);
    bench_inclusive_sum<float>(n);
    bench_inclusive_sum<std::uint64_t>(n);
  }
  if (wanted("reduce"))
  {
    bench_reduce_sum<int>(n);
    bench_reduce_sum<std::uint32_t>(n);
    bench_reduce_sum<float>(n);
    bench_reduce_sum<std::uint64_t>(n);
  }
  return EXIT_SUCCESS;
}
