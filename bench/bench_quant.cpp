// bench_quant (Google Benchmark): quantized_linear on GGUF block-quantized weights, at decode
// (one input row: GB/s of weight read, against the machine's copy bandwidth) and at prefill
// (512 rows: GFLOP/s), with the float32 mm of the same shapes for comparison.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "BenchUtil.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/retorch.h"

namespace rt = retorch;

namespace {

constexpr int64_t kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14, kF32 = 0;

// Bytes per second of a pre-faulted out = a + b over 16M floats (3 streams), as bench_compile
// measures it: what a memory-bound kernel can reach here.
double g_copy_bytes_per_s = 0;

double copy_bytes_per_s() {
  rt::Tensor a = rt::rand({16 << 20}), b = rt::rand({16 << 20}), c = rt::empty({16 << 20});
  double t = bench::time_per_call([&] { rt::add_out(c, a, b); }, 10);
  return 3.0 * (16 << 20) * 4 / t;
}

const char* qtype_name(int64_t q) {
  switch (q) {
    case kQ4_0:
      return "Q4_0";
    case kQ8_0:
      return "Q8_0";
    case kQ4_K:
      return "Q4_K";
    case kQ6_K:
      return "Q6_K";
    default:
      return "F32";
  }
}

// A [N, K] weight in qtype: Q8_0/Q4_0 quantized from normal values, K-quants as random bytes
// with small fp16 scales (retorch has no K-quant quantizer), F32 as float values.
rt::Tensor make_weight(int64_t qtype, int64_t N, int64_t K) {
  if (qtype == kF32) return rt::randn({N, K});
  if (qtype == kQ8_0 || qtype == kQ4_0) return rt::quantize_blocks(rt::randn({N, K}), qtype);
  const int64_t bytes = qtype == kQ4_K ? 144 : 210;
  rt::Tensor w = rt::randint(256, {N, K / 256 * bytes}, rt::TensorOptions(rt::kByte));
  uint8_t* p = w.data_ptr<uint8_t>();
  const uint16_t h = 0x2c00;  // 0.0625
  for (int64_t b = 0; b < w.numel(); b += bytes) {
    std::memcpy(p + b + (qtype == kQ6_K ? 208 : 0), &h, 2);
    if (qtype == kQ4_K) std::memcpy(p + b + 2, &h, 2);
  }
  return w;
}

// Enough copies of a weight to overflow the last-level cache: a model streams through all its
// layers, so a single 9 MB weight that stays in a 32 MB L3 would time the cache, not memory.
std::vector<rt::Tensor> weight_copies(int64_t qtype, int64_t N, int64_t K) {
  std::vector<rt::Tensor> out{make_weight(qtype, N, K)};
  const double bytes = double(out[0].numel()) * double(out[0].element_size());
  while (double(out.size()) * bytes < 256e6) out.push_back(out[0].clone());
  return out;
}

rt::Tensor linear(const rt::Tensor& x, const rt::Tensor& w, int64_t qtype, int64_t K) {
  if (qtype == kF32) return rt::mm(x, w.t());  // the float32 GEMV/GEMM of the same shape
  return rt::quantized_linear(x, w, qtype, K);
}

// Decode: one input row, every weight byte read once per call.
void BM_Decode(benchmark::State& state) {
  const int64_t qtype = state.range(0), N = state.range(1), K = state.range(2);
  std::vector<rt::Tensor> ws = weight_copies(qtype, N, K);
  rt::Tensor x = rt::randn({1, K});
  const double bytes = double(ws[0].numel()) * double(ws[0].element_size());
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(linear(x, ws[i++ % ws.size()], qtype, K));
  const double n = double(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(n * bytes / 1e9, benchmark::Counter::kIsRate);
  state.counters["of_copy_bw"] =
      benchmark::Counter(n * bytes / g_copy_bytes_per_s, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(qtype_name(qtype)) + " " + std::to_string(N) + "x" +
                 std::to_string(K));
}

// Prefill: 512 input rows, compute-bound (dequantized tiles + SGEMM).
void BM_Prefill(benchmark::State& state) {
  const int64_t qtype = state.range(0), N = state.range(1), K = state.range(2), M = 512;
  rt::Tensor w = make_weight(qtype, N, K), x = rt::randn({M, K});
  for (auto _ : state) benchmark::DoNotOptimize(linear(x, w, qtype, K));
  state.counters["GFLOP/s"] =
      benchmark::Counter(double(state.iterations()) * 2.0 * double(M) * double(N) * double(K) / 1e9,
                         benchmark::Counter::kIsRate);
  state.SetLabel(std::string(qtype_name(qtype)) + " 512x" + std::to_string(N) + "x" +
                 std::to_string(K));
}

void decode_args(benchmark::internal::Benchmark* b) {
  for (int64_t q : {kQ4_0, kQ8_0, kQ4_K, kQ6_K, kF32})
    for (int64_t n : {4096, 11008}) b->Args({q, n, 4096});
  // A ~110M-parameter model's MLP (hidden 768): short rows, where per-row costs show.
  for (int64_t q : {kQ4_0, kQ8_0}) b->Args({q, 2048, 768});
}

BENCHMARK(BM_Decode)->Apply(decode_args)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Prefill)
    ->Args({kQ4_0, 4096, 4096})
    ->Args({kQ8_0, 4096, 4096})
    ->Args({kQ4_K, 4096, 4096})
    ->Args({kF32, 4096, 4096})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  g_copy_bytes_per_s = copy_bytes_per_s();
  std::printf("copy bandwidth (out = a + b, 16M floats): %.1f GB/s; threads: %d\n",
              g_copy_bytes_per_s / 1e9, rt::get_num_threads());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
