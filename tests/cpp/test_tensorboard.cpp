// TensorBoard writer tests: CRC32C check values, protobuf wire bytes, record framing, histograms.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "retorch/utils/tensorboard/Crc32c.h"
#include "retorch/utils/tensorboard/EventFileWriter.h"
#include "retorch/utils/tensorboard/ProtoEncoder.h"
#include "retorch/utils/tensorboard/Summary.h"
#include "retorch/utils/tensorboard/SummaryWriter.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::utils::tensorboard;

namespace {

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

uint32_t read_u32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | uint8_t(s[at + i]);
  return v;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("retorch_tb_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

}  // namespace

TEST(Crc32cTest, KnownCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);    // RFC 3720 B.4: 32 zero bytes
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);  // RFC 3720 B.4: 32 0xFF bytes
  EXPECT_EQ(crc32c_extend_portable(0, "123456789", 9), 0xE3069283u);
}

TEST(Crc32cTest, HardwareMatchesTableAndExtends) {
  std::mt19937 gen(7);
  std::string buf(1000, '\0');
  for (char& c : buf) c = char(gen());
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 999, 1000}) {
    EXPECT_EQ(crc32c_extend(0, buf.data(), n), crc32c_extend_portable(0, buf.data(), n)) << n;
  }
  uint32_t split = crc32c_extend(crc32c_extend(0, buf.data(), 333), buf.data() + 333, 667);
  EXPECT_EQ(split, crc32c(buf));
}

TEST(Crc32cTest, MaskRoundTrips) {
  for (uint32_t c : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu}) EXPECT_EQ(unmask_crc(mask_crc(c)), c);
  EXPECT_EQ(mask_crc(0), 0xa282ead8u);
}

TEST(ProtoEncoderTest, WireBytes) {
  ProtoEncoder e;
  e.varint_field(1, 150);  // the protobuf docs' example: 08 96 01
  EXPECT_EQ(hex(e.bytes()), "089601");
  ProtoEncoder s;
  s.bytes_field(2, "testing");
  EXPECT_EQ(hex(s.bytes()), "120774657374696e67");
  ProtoEncoder d;
  d.double_field(1, 1.0);
  EXPECT_EQ(hex(d.bytes()), "09000000000000f03f");
  ProtoEncoder f;
  f.float_field(2, 1.0f);
  EXPECT_EQ(hex(f.bytes()), "150000803f");
  ProtoEncoder neg;
  neg.varint_field(2, uint64_t(int64_t(-1)));  // negative int64: ten bytes
  EXPECT_EQ(hex(neg.bytes()), "10ffffffffffffffffff01");
  ProtoEncoder packed;
  packed.packed_doubles_field(6, {1.0, 2.0});
  EXPECT_EQ(hex(packed.bytes()), "3210000000000000f03f0000000000000040");
  ProtoEncoder outer;
  outer.message_field(3, e);
  EXPECT_EQ(hex(outer.bytes()), "1a03089601");
}

TEST(ProtoEncoderTest, ScalarSummaryBytes) {
  // Summary{value: [{tag: "a", simple_value: 1.0}]}
  EXPECT_EQ(hex(scalar_summary("a", 1.0f)), "0a080a0161150000803f");
}

TEST(RecordTest, FramingAndCrcs) {
  std::string data = "hello";
  std::string rec = frame_record(data);
  ASSERT_EQ(rec.size(), 8 + 4 + data.size() + 4);
  EXPECT_EQ(hex(rec.substr(0, 8)), "0500000000000000");
  EXPECT_EQ(read_u32(rec, 8), masked_crc32c(rec.substr(0, 8)));
  EXPECT_EQ(rec.substr(12, 5), data);
  EXPECT_EQ(read_u32(rec, 17), masked_crc32c(data));
}

TEST(HistogramTest, TrimsLikeTorch) {
  // numpy.histogram([1, 2, 2, 3], bins=[0, 1, 2, 3, 4, 5]) counts [0, 1, 2, 1, 0]; torch keeps the
  // empty bucket left of the first non-empty one and drops the trailing empty one.
  Histogram h = make_histogram({1, 2, 2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(h.bucket, (std::vector<double>{0, 1, 2, 1}));
  EXPECT_EQ(h.bucket_limit, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(h.min, 1);
  EXPECT_EQ(h.max, 3);
  EXPECT_EQ(h.num, 4);
  EXPECT_EQ(h.sum, 8);
  EXPECT_EQ(h.sum_squares, 18);
  // First bucket non-empty: an empty bucket at the left edge is prepended.
  Histogram h2 = make_histogram({0, 5}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(h2.bucket, (std::vector<double>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(h2.bucket_limit, (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(HistogramTest, EdgesAndErrors) {
  auto& e = default_histogram_edges();
  EXPECT_EQ(e.size() % 2, 1u);
  EXPECT_EQ(e[e.size() / 2], 0.0);
  EXPECT_DOUBLE_EQ(e[e.size() / 2 + 1], 1e-12);
  EXPECT_EQ(uniform_histogram_edges(2, 2, 2), (std::vector<double>{1.5, 2, 2.5}));
  EXPECT_THROW(make_histogram({}, {0, 1}), Error);
  EXPECT_THROW(make_histogram({std::nan("")}, {0, 1}), Error);
  EXPECT_THROW(make_histogram({7}, {0, 1}), Error);
  EXPECT_THROW(uniform_histogram_edges(0, 1, 0), Error);
}

TEST(SummaryWriterTest, WritesFramedRecords) {
  std::string dir = temp_dir("records");
  std::string path;
  {
    SummaryWriter w(dir);
    w.add_scalar("loss", 0.5, 3, 100.0);
    w.add_histogram("w", ones({4}), 1);
    w.add_text("note", "hi", 2);
    path = w.file_path();
    EXPECT_EQ(std::filesystem::path(path).parent_path(), std::filesystem::path(dir));
    EXPECT_EQ(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u);
  }
  std::string bytes = read_file(path);
  size_t at = 0, records = 0;
  while (at < bytes.size()) {
    ASSERT_LE(at + 12, bytes.size());
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[at + i]);
    EXPECT_EQ(read_u32(bytes, at + 8), masked_crc32c(bytes.substr(at, 8)));
    ASSERT_LE(at + 12 + n + 4, bytes.size());
    EXPECT_EQ(read_u32(bytes, at + 12 + n), masked_crc32c(bytes.substr(at + 12, n)));
    if (records == 0) {
      EXPECT_NE(bytes.substr(at + 12, n).find("brain.Event:2"), std::string::npos);
    }
    at += 12 + n + 4;
    ++records;
  }
  EXPECT_EQ(records, 4u);
  std::filesystem::remove_all(dir);
}

TEST(SummaryWriterTest, BadLogDirIsAClearError) {
  std::string file = temp_dir("notadir");
  std::ofstream(file) << "x";
  Error e = retorch::testing::catch_error([&] { SummaryWriter w(file); });
  EXPECT_NE(e.message().find("cannot create log directory"), std::string::npos) << e.message();
  Error e2 = retorch::testing::catch_error([&] { SummaryWriter w(file + "/sub"); });
  EXPECT_NE(e2.message().find(file), std::string::npos) << e2.message();
  std::filesystem::remove(file);
}
