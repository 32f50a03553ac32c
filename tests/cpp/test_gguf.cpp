// Tests of retorch::io::GgufFile on hand-built files, and of the quantized dot-product kernels'
// scalar and AVX2 forms against each other.
#include <cstring>
#include <fstream>
#include <random>

#include "retorch/backend/cpu/QuantBlocks.h"
#include "retorch/io/Gguf.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

namespace {

// Little-endian GGUF fields appended to a byte string.
struct Bytes {
  std::string b;
  template <typename T>
  Bytes& pod(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    pod<uint64_t>(s.size());
    b += s;
    return *this;
  }
  Bytes& pad(size_t align) {
    b.append((align - b.size() % align) % align, '\0');
    return *this;
  }
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

// A v3 file: two metadata entries, an F32 [2, 3] tensor and a Q8_0 tensor of 2 rows x 32.
std::string sample_file() {
  Bytes f;
  f.pod<uint32_t>(0x46554747).pod<uint32_t>(3).pod<uint64_t>(2).pod<uint64_t>(2);
  f.str("general.architecture").pod<uint32_t>(8).str("llama");
  f.str("llama.ids").pod<uint32_t>(9).pod<uint32_t>(5).pod<uint64_t>(3);
  f.pod<int32_t>(-1).pod<int32_t>(0).pod<int32_t>(7);
  f.str("w").pod<uint32_t>(2).pod<uint64_t>(3).pod<uint64_t>(2).pod<uint32_t>(0).pod<uint64_t>(0);
  f.str("q").pod<uint32_t>(2).pod<uint64_t>(32).pod<uint64_t>(2).pod<uint32_t>(8).pod<uint64_t>(32);
  f.pad(32);
  for (int i = 0; i < 6; ++i) f.pod<float>(float(i) - 2.5f);
  f.pad(32);
  for (int row = 0; row < 2; ++row) {
    f.pod<uint16_t>(0x3800);  // fp16 0.5
    for (int j = 0; j < 32; ++j) f.pod<int8_t>(int8_t(j - 16 + row));
  }
  return f.b;
}

}  // namespace

TEST(GgufReader, ReadsMetadataAndTensors) {
  TempDir dir("gguf");
  write_file(dir.file("m.gguf"), sample_file());
  auto f = io::GgufFile::open(dir.file("m.gguf"));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int_array("llama.ids"), (std::vector<int64_t>{-1, 0, 7}));
  EXPECT_EQ(f->get_int("missing", 42), 42);
  EXPECT_TRUE(contains(catch_error([&] { f->get_int("general.architecture"); }).message(),
                       {"metadata 'general.architecture' is string, expected an integer"}));
  ASSERT_EQ(f->tensors().size(), 2u);

  Tensor w = f->tensor("w");  // ne = [3, 2]: row-major [2, 3], see Note [GGUF dimension order]
  EXPECT_EQ(shape(w), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.dtype(), kFloat);
  EXPECT_EQ(values(w), (std::vector<double>{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}));

  const io::GgufTensorInfo* qi = f->find_tensor("q");
  ASSERT_NE(qi, nullptr);
  EXPECT_EQ(qi->type, 8);
  EXPECT_EQ(qi->shape(), (std::vector<int64_t>{2, 32}));
  Tensor q = f->tensor("q");  // Q8_0 blocks: uint8 [rows, row_bytes]
  EXPECT_EQ(shape(q), (std::vector<int64_t>{2, 34}));
  EXPECT_EQ(q.dtype(), kByte);
  std::vector<double> deq = values(dequantize_blocks(q, 8, 32));
  for (int row = 0; row < 2; ++row)
    for (int j = 0; j < 32; ++j) EXPECT_EQ(deq[size_t(row * 32 + j)], 0.5 * (j - 16 + row));
  EXPECT_TRUE(
      contains(catch_error([&] { f->tensor("nope"); }).message(), {"no tensor named 'nope'"}));
}

TEST(GgufReader, TensorsKeepTheMappingAlive) {
  TempDir dir("gguf");
  write_file(dir.file("m.gguf"), sample_file());
  Tensor w = io::GgufFile::open(dir.file("m.gguf"))->tensor("w");
  std::filesystem::remove(dir.file("m.gguf"));
  EXPECT_EQ(values(w)[5], 2.5);
}

TEST(GgufReader, MalformedFilesRaise) {
  TempDir dir("gguf");
  const std::string good = sample_file();
  auto error_of = [&](const std::string& bytes) {
    write_file(dir.file("bad.gguf"), bytes);
    return catch_error([&] { io::GgufFile::open(dir.file("bad.gguf")); }).message();
  };
  // Cut in the header, in a key, in a tensor info, and in the data.
  EXPECT_TRUE(contains(error_of(good.substr(0, 10)), {"bad.gguf", "truncated: the tensor count"}));
  EXPECT_TRUE(contains(error_of(good.substr(0, 40)),
                       {"bad.gguf", "tensor count 2 is impossible in a 40-byte file"}));
  EXPECT_TRUE(contains(error_of(good.substr(0, 130)), {"truncated: a dim (tensor 'w')"}));
  EXPECT_TRUE(contains(error_of(good.substr(0, 150)),
                       {"truncated: the tensor offset (tensor 'w') needs 8 bytes at offset 147"}));
  std::string long_key = good;
  const uint64_t len = 1000;
  std::memcpy(&long_key[24], &len, 8);  // the first key's length
  EXPECT_TRUE(contains(error_of(long_key), {"string length 1000 of a metadata key (metadata "
                                            "entry 0) at offset 24 runs past the end"}));
  EXPECT_TRUE(contains(error_of(good.substr(0, good.size() - 1)),
                       {"tensor 'q' data [32, 100)", "runs past the end of the file"}));
  std::string bad_magic = good;
  bad_magic[3] = 'X';
  EXPECT_TRUE(contains(error_of(bad_magic), {"not a GGUF file (magic 'GGUX'"}));
  std::string huge = good;
  const uint64_t n = uint64_t(1) << 62;
  std::memcpy(&huge[8], &n, 8);  // tensor count
  EXPECT_TRUE(contains(error_of(huge), {"tensor count 4611686018427387904 is impossible"}));
}

TEST(GgufQuant, ScalarAvx2AndAvx512DotsAgree) {
  // Every kernel against the exact dot of the dequantized weight row with the dequantized
  // 8-bit input, up to float32 summation order; lengths with and without a tail of blocks past
  // the AVX-512 kernels' groups of eight.
  using namespace retorch::cpu::quant;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  if (!dot_fn_avx2(kQ8_0)) GTEST_SKIP() << "no AVX2 on this CPU";
  for (int64_t qt : {kQ8_0, kQ4_0, kQ4_K, kQ6_K}) {
    const QTypeInfo* info = qtype_info(qt);
    const DotFn avx512 = dot_fn_avx512(qt);  // Q8_0 / Q4_0 where the CPU has AVX-512 VNNI
    for (int64_t K : {int64_t(32), int64_t(512), int64_t(608), int64_t(768)}) {
      if (K % info->block != 0) continue;
      std::vector<float> x(static_cast<size_t>(K));
      for (float& v : x) v = normal(gen);
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<uint8_t> w(size_t(row_bytes(*info, K)));
        for (uint8_t& b : w) b = uint8_t(gen());
        // Sane fp16 scales (1/32 to 1/4), a different one per block, where each block keeps them.
        const uint16_t scales[4] = {0x2800, 0x2c00, 0x3000, 0x3400};
        for (size_t b = 0; b < w.size(); b += size_t(info->bytes)) {
          const uint16_t h = scales[gen() % 4];
          std::memcpy(&w[b + (qt == kQ6_K ? 208 : 0)], &h, 2);
          if (qt == kQ4_K) std::memcpy(&w[b + 2], &h, 2);
        }
        const int64_t block = act_block(qt);
        std::vector<int8_t> q(static_cast<size_t>(K));
        std::vector<float> d(static_cast<size_t>(K / block)), dsum(static_cast<size_t>(K / kQK));
        std::vector<float> wf(static_cast<size_t>(K));
        std::vector<int16_t> sums(static_cast<size_t>(K / 16));
        quantize_act(x.data(), K, block, q.data(), d.data(), sums.data(), dsum.data());
        ActRow a{q.data(), d.data(), sums.data(), dsum.data()};
        dequantize_row(qt, w.data(), wf.data(), K);
        double exact = 0, scale = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double t =
              double(wf[size_t(k)]) * double(q[size_t(k)]) * double(d[size_t(k / block)]);
          exact += t;
          scale += std::abs(t);
        }
        EXPECT_NEAR(dot_fn_scalar(qt)(K, w.data(), a), exact, 1e-5 * scale) << info->name << K;
        EXPECT_NEAR(dot_fn_avx2(qt)(K, w.data(), a), exact, 1e-5 * scale) << info->name << K;
        if (avx512) {
          EXPECT_NEAR(avx512(K, w.data(), a), exact, 1e-5 * scale) << info->name << K;
        }
      }
    }
  }
}

TEST(GgufQuant, ScalarAndAvx2DequantizeAgreeBitwise) {
  using namespace retorch::cpu::quant;
  std::mt19937 gen(11);
  const int64_t K = 512;
  for (int64_t qt : {kQ8_0, kQ4_0, kQ4_K, kQ6_K, kF16, kBF16}) {
    const QTypeInfo* info = qtype_info(qt);
    std::vector<uint8_t> w(size_t(row_bytes(*info, K)));
    for (uint8_t& b : w) b = uint8_t(gen());
    if (qt != kF16 && qt != kBF16) {  // finite fp16 scales, random otherwise
      std::uniform_int_distribution<int> scale(0x0400, 0x3bff);  // normal halves up to ~0.99
      for (size_t b = 0; b < w.size(); b += size_t(info->bytes)) {
        const uint16_t h = uint16_t(scale(gen));
        std::memcpy(&w[b + (qt == kQ6_K ? 208 : 0)], &h, 2);
        if (qt == kQ4_K) std::memcpy(&w[b + 2], &h, 2);
      }
    }
    std::vector<float> fast(K), slow(K);
    dequantize_row(qt, w.data(), fast.data(), K);
    dequantize_row_scalar(qt, w.data(), slow.data(), K);
    EXPECT_EQ(std::memcmp(fast.data(), slow.data(), sizeof(float) * K), 0) << info->name;
  }
}
