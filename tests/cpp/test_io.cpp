// Tests of retorch::io: safetensors round trips and validation, atomic file replacement.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "retorch/io/AtomicFile.h"
#include "retorch/io/Safetensors.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;
namespace fs = std::filesystem;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

/// A safetensors file from a header string and a data buffer (header length written as given).
std::string make_file(const std::string& header, const std::string& data, int64_t len = -1) {
  uint64_t n = len < 0 ? header.size() : uint64_t(len);
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

OrderedDict<Tensor> sample_tensors() {
  OrderedDict<Tensor> d;
  manual_seed(3);
  d.insert("f64", randn({2, 3}, TensorOptions(kDouble)));
  d.insert("f32", randn({4}));
  d.insert("f16", randn({3, 2}).to(kHalf));
  d.insert("bf16", randn({5}).to(kBFloat16));
  d.insert("i64", arange(-3, 3).to(kLong));
  d.insert("i32", arange(7).to(kInt).reshape({7, 1}));
  d.insert("i16", arange(-5, 5).to(kShort));
  d.insert("i8", arange(-4, 4).to(kChar));
  d.insert("u8", arange(250, 256).to(kByte));
  d.insert("bool", arange(6).remainder(2).to(kBool));
  d.insert("scalar", tensor(2.5));
  d.insert("empty", empty({0, 3}));
  d.insert("strided", arange(12).to(kFloat).reshape({3, 4}).transpose(0, 1));
  return d;
}

}  // namespace

TEST(Safetensors, RoundTripAllDtypes) {
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  auto tensors = sample_tensors();
  ASSERT_FALSE(tensors["strided"].is_contiguous());
  io::save_safetensors(path, tensors, {{"format", "pt"}, {"note", "hello"}});

  std::string bytes = read_bytes(path);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(bytes[8], '{');

  io::SafetensorsFile loaded = io::load_safetensors_file(path);
  EXPECT_EQ(loaded.metadata.at("format"), "pt");
  EXPECT_EQ(loaded.metadata.at("note"), "hello");
  EXPECT_EQ(loaded.tensors.keys(), tensors.keys());
  for (const auto& item : tensors) {
    const Tensor& got = loaded.tensors[item.key];
    EXPECT_EQ(got.dtype(), item.value.dtype()) << item.key;
    EXPECT_EQ(shape(got), shape(item.value)) << item.key;
    EXPECT_TRUE(got.is_contiguous()) << item.key;
    EXPECT_EQ(values(got), values(item.value)) << item.key;
  }
  EXPECT_EQ(io::load_safetensors_metadata(path).size(), 2u);
}

TEST(Safetensors, LoadedTensorsAreCopyOnWriteViews) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  OrderedDict<Tensor> d;
  d.insert("w", arange(16).to(kFloat));
  io::save(d, path);
  Tensor w;
  {
    auto loaded = io::load(path);
    w = loaded["w"];
  }
  // The mapping outlives the dict; writing a loaded tensor never changes the file.
  w.add_(1);
  EXPECT_EQ(values(w)[0], 1.0);
  EXPECT_EQ(values(io::load(path)["w"])[0], 0.0);

  // Zero copy: aligned tensors point into one mapping, laid out as the header says.
  d.insert("v", arange(4).to(kFloat));
  io::save(d, path);
  auto both = io::load(path);
  EXPECT_EQ(static_cast<char*>(both["w"].data_ptr()) + 64,
            static_cast<char*>(both["v"].data_ptr()));
}

TEST(Safetensors, NoMetadataAndEmptyDict) {
  TempDir dir;
  std::string path = dir.file("e.safetensors");
  io::save_safetensors(path, OrderedDict<Tensor>{});
  EXPECT_EQ(io::load_safetensors(path).size(), 0u);
  EXPECT_TRUE(io::load_safetensors_metadata(path).empty());
}

TEST(Safetensors, RejectsReservedName) {
  TempDir dir;
  OrderedDict<Tensor> d;
  d.insert("__metadata__", zeros({1}));
  auto e = catch_error([&] { io::save_safetensors(dir.file("x"), d); });
  EXPECT_TRUE(contains(e.message(), {"__metadata__", "reserved"}));
}

TEST(Safetensors, CorruptFilesGiveClearErrors) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  auto expect_error = [&](const std::string& bytes, std::initializer_list<std::string> parts) {
    write_bytes(path, bytes);
    auto e = catch_error([&] { io::load_safetensors(path); });
    EXPECT_TRUE(contains(e.message(), parts));
    EXPECT_TRUE(contains(e.message(), {path}));
  };
  std::string f32x2(8, '\0');
  auto hdr = [](const std::string& body) { return "{" + body + "}"; };
  std::string ok = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

  expect_error("", {"too short"});
  expect_error(make_file(hdr(ok), f32x2).substr(0, 20), {"header length", "past the end"});
  expect_error(make_file(hdr(ok), f32x2, 1000), {"header length 1000", "past the end"});
  expect_error(make_file("{\"a\": [", f32x2), {"invalid JSON"});
  // A number past double's range is nlohmann's out_of_range, not a parse_error (a fuzzer find).
  expect_error(make_file("{\"a\": 44444e4444}", f32x2), {"invalid JSON", "number overflow"});
  expect_error(make_file("[1, 2]", ""), {"JSON object"});
  expect_error(make_file(hdr(R"("a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]})"),
                         "ab"),
               {"tensor 'a'", "unsupported dtype 'F8_E4M3'"});
  expect_error(make_file(hdr(R"("a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), f32x2),
               {"tensor 'a'", "non-negative"});
  expect_error(make_file(hdr(R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]})"), f32x2),
               {"tensor 'a'", "hold 16 bytes", "needs 8"});
  expect_error(make_file(hdr(R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]})"), f32x2),
               {"tensor 'a'", "outside the 8-byte data buffer"});
  expect_error(make_file(hdr(R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]})"), f32x2),
               {"tensor 'a'", "end before"});
  expect_error(make_file(hdr(R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})"),
                         f32x2),
               {"tensor 'b'", "overlap tensor 'a'"});
  expect_error(make_file(hdr(R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})"), f32x2),
               {"hole before tensor 'a'"});
  expect_error(make_file(hdr(ok), f32x2 + "xx"), {"cover only 8", "trailing"});
  expect_error(make_file(hdr(R"("a":{"dtype":"F32","shape":[2]})"), f32x2),
               {"tensor 'a'", "missing \"data_offsets\""});
  expect_error(make_file(hdr(R"("__metadata__":{"k":1},)" + ok), f32x2),
               {"__metadata__", "must be a string"});
  expect_error(make_file(hdr(R"("a":{"dtype":"F32","shape":[4294967296,4294967296],)"
                             R"("data_offsets":[0,8]})"),
                         f32x2),
               {"tensor 'a'", "more than 2^64"});
  auto e = catch_error([&] { io::load_safetensors(dir.file("missing.safetensors")); });
  EXPECT_TRUE(contains(e.message(), {"missing.safetensors", "No such file"}));
}

TEST(Safetensors, UnalignedDataIsCopied) {
  // A hand-made file whose F32 tensor starts at an odd file offset still loads (by copying).
  TempDir dir;
  std::string path = dir.file("odd.safetensors");
  std::string header =
      R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})";
  header.append((8 - (8 + header.size()) % 8) % 8, ' ');
  float v = 1.5f;
  std::string data(1, char(7));
  data.append(reinterpret_cast<const char*>(&v), 4);
  write_bytes(path, make_file(header, data));
  auto d = io::load_safetensors(path);
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(values(d["a"]), std::vector<double>{1.5});
  EXPECT_EQ(values(d["b"]), std::vector<double>{7});
}

TEST(AtomicWrite, ReplacesTarget) {
  TempDir dir;
  std::string path = dir.file("ckpt.bin");
  write_bytes(path, "old contents");
  io::atomic_write(path, [&](std::FILE* f) { io::write_all(f, "new", 3, path); });
  EXPECT_EQ(read_bytes(path), "new");
}

TEST(AtomicWrite, ThrowingWriterKeepsOldFile) {
  TempDir dir;
  std::string path = dir.file("ckpt.bin");
  write_bytes(path, "old contents");
  EXPECT_THROW(io::atomic_write(path,
                                [&](std::FILE* f) {
                                  io::write_all(f, "partial", 7, path);
                                  std::fflush(f);
                                  throw std::runtime_error("writer failed midway");
                                }),
               std::runtime_error);
  EXPECT_EQ(read_bytes(path), "old contents");
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1) << "the temporary file was not removed";

  // A failing save_safetensors (undefined tensor) leaves the old checkpoint too.
  OrderedDict<Tensor> d;
  d.insert("x", Tensor());
  EXPECT_THROW(io::save_safetensors(path, d), Error);
  EXPECT_EQ(read_bytes(path), "old contents");
}

TEST(AtomicWrite, MissingDirectoryIsAnError) {
  TempDir dir;
  auto e = catch_error([&] {
    io::atomic_write(dir.file("no/such/dir/file"), [](std::FILE*) {});
  });
  EXPECT_TRUE(contains(e.message(), {"no/such/dir", "temporary file"}));
}
