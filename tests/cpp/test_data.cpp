// Tests of retorch::data: IDX reading, MNIST, datasets, samplers, DataLoader, transforms.
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "retorch/data/DataLoader.h"
#include "retorch/data/Idx.h"
#include "retorch/data/Mnist.h"
#include "retorch/data/Random.h"
#include "retorch/data/Transforms.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::data;
using namespace retorch::testing;
namespace fs = std::filesystem;

namespace {

/// IDX bytes: magic with type code, big-endian dims, then the given payload.
std::string idx_bytes(uint8_t code, const std::vector<uint32_t>& dims, const std::string& payload) {
  std::string out = {0, 0, char(code), char(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) out.push_back(char((d >> s) & 0xFF));
  return out + payload;
}

void write_plain(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  gzclose(f);
}

std::string iota_bytes(size_t n, int start = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char((start + int(i)) & 0xFF);
  return s;
}

/// A dataset that is not a TensorDataset (exercises the get + stack path); throws at `bad`.
class SquaresDataset : public Dataset {
 public:
  explicit SquaresDataset(int64_t n, int64_t bad = -1) : n_(n), bad_(bad) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    check_index(i);
    if (i == bad_) throw std::runtime_error("sample " + std::to_string(i) + " is broken");
    return {full({2}, double(i * i)), tensor(int64_t(i))};
  }

 private:
  int64_t n_, bad_;
};

std::shared_ptr<TensorDataset> counting_dataset(int64_t n) {
  Tensor data = arange(n * 6).to(kFloat).reshape({n, 1, 2, 3});
  return std::make_shared<TensorDataset>(data, arange(n));
}

std::vector<std::vector<double>> loader_targets(DataLoader& loader) {
  std::vector<std::vector<double>> out;
  for (Example& batch : loader) out.push_back(values(batch.target));
  return out;
}

}  // namespace

// ---- IDX

TEST(Idx, ReadsPlainAndGzipExactly) {
  TempDir dir;
  std::string payload = iota_bytes(3 * 4 * 5, 200);
  std::string bytes = idx_bytes(0x08, {3, 4, 5}, payload);
  write_plain(dir.file("images-idx3-ubyte"), bytes);
  write_gz(dir.file("images-idx3-ubyte.gz"), bytes);
  for (const char* name : {"images-idx3-ubyte", "images-idx3-ubyte.gz"}) {
    Tensor t = read_idx(dir.file(name));
    EXPECT_EQ(t.dtype(), kByte);
    EXPECT_EQ(shape(t), (std::vector<int64_t>{3, 4, 5}));
    EXPECT_EQ(std::memcmp(t.data_ptr(), payload.data(), payload.size()), 0) << name;
  }
}

TEST(Idx, ReadsMultiByteTypesBigEndian) {
  TempDir dir;
  // int32 values 1, -2 and float32 1.5 as big-endian.
  write_plain(dir.file("i32"), idx_bytes(0x0C, {2}, std::string("\0\0\0\1\xFF\xFF\xFF\xFE", 8)));
  EXPECT_EQ(values(read_idx(dir.file("i32"))), (std::vector<double>{1, -2}));
  write_gz(dir.file("f32.gz"), idx_bytes(0x0D, {1, 1}, std::string("\x3F\xC0\0\0", 4)));
  Tensor f = read_idx(dir.file("f32.gz"));
  EXPECT_EQ(f.dtype(), kFloat);
  EXPECT_EQ(values(f), std::vector<double>{1.5});
  write_plain(dir.file("i16"), idx_bytes(0x0B, {1}, std::string("\x01\x02", 2)));
  EXPECT_EQ(values(read_idx(dir.file("i16"))), std::vector<double>{258});
}

TEST(Idx, BadFilesGiveClearErrors) {
  TempDir dir;
  auto expect_error = [&](const std::string& name, const std::string& bytes, bool gz,
                          std::initializer_list<std::string> parts) {
    std::string path = dir.file(name);
    if (gz) write_gz(path, bytes);
    else write_plain(path, bytes);
    auto e = catch_error([&] { read_idx(path); });
    EXPECT_TRUE(contains(e.message(), parts));
    EXPECT_TRUE(contains(e.message(), {path}));
  };
  std::string full_payload = iota_bytes(60);
  expect_error("trunc", idx_bytes(0x08, {3, 4, 5}, full_payload.substr(0, 50)), false,
               {"truncated", "3 x 4 x 5", "need 60 bytes", "found 50"});
  expect_error("trunc.gz", idx_bytes(0x08, {3, 4, 5}, full_payload.substr(0, 7)), true,
               {"truncated", "need 60 bytes", "found 7"});
  expect_error("magic", std::string("\x12\x34\x08\x01", 4) + "abcd", false,
               {"bad magic number 0x12340801"});
  expect_error("dtype", idx_bytes(0x07, {1}, "a"), false, {"bad magic number 0x00000701"});
  expect_error("nodims", idx_bytes(0x08, {}, ""), false, {"bad magic number 0x00000800"});
  expect_error("short", std::string("\0\0", 2), false, {"too short", "magic"});
  expect_error("hdr", idx_bytes(0x08, {3, 4, 5}, "").substr(0, 9), false,
               {"truncated in its header", "3 dims need 12 bytes", "found 5"});
  expect_error("trailing", idx_bytes(0x08, {2}, "abc"), false, {"bytes after the 2 bytes"});
  expect_error("huge", idx_bytes(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, "x"), false,
               {"too large"});
  expect_error("huge2", idx_bytes(0x08, {0xFFFFFFFF, 0xFFFFFF}, "xyz"), false,
               {"truncated", "found 3"});
  auto e = catch_error([&] { read_idx(dir.file("nope")); });
  EXPECT_TRUE(contains(e.message(), {"cannot open IDX file", "nope", "No such file"}));
}

// ---- MNIST

TEST(Mnist, ReadsSyntheticFiles) {
  TempDir dir;
  std::string pixels = iota_bytes(3 * 28 * 28);
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_bytes(0x08, {3, 28, 28}, pixels));
  write_plain(dir.file("train-labels-idx1-ubyte"), idx_bytes(0x08, {3}, std::string("\x07\0\x09", 3)));
  MNIST ds(dir.path.string(), true);
  EXPECT_EQ(ds.size(), 3);
  Example e = ds.get(1);
  EXPECT_EQ(shape(e.data), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(e.data.dtype(), kFloat);
  EXPECT_EQ(ds.targets().dtype(), kLong);
  EXPECT_EQ(values(ds.targets()), (std::vector<double>{7, 0, 9}));
  EXPECT_FLOAT_EQ(float(values(e.data)[5]), float(uint8_t(pixels[784 + 5])) / 255.0f);

  auto missing = catch_error([&] { MNIST(dir.path.string(), false); });
  EXPECT_TRUE(contains(missing.message(), {"t10k-images-idx3-ubyte", ".gz", dir.path.string()}));
  write_plain(dir.file("t10k-images-idx3-ubyte"), idx_bytes(0x08, {2, 28, 28}, iota_bytes(2 * 784)));
  write_plain(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(0x08, {3}, "abc"));
  auto mismatch = catch_error([&] { MNIST(dir.path.string(), false); });
  EXPECT_TRUE(contains(mismatch.message(), {"2 images", "3 labels"}));
}

TEST(Mnist, FashionMissingFileNamesPackage) {
  TempDir dir;
  auto e = catch_error([&] { FashionMNIST(dir.path.string()); });
  EXPECT_TRUE(contains(e.message(), {"FashionMNIST", "train-images-idx3-ubyte", dir.path.string(),
                                     "dataset-fashion-mnist"}));
}

TEST(Mnist, RealFashionMnist) {
  if (!fs::exists(std::string(FashionMNIST::kDefaultRoot) + "/train-images-idx3-ubyte.gz") &&
      !fs::exists(std::string(FashionMNIST::kDefaultRoot) + "/train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)";
  FashionMNIST train;
  FashionMNIST test(FashionMNIST::kDefaultRoot, false);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  for (const TensorDataset* ds : {static_cast<const TensorDataset*>(&train),
                                  static_cast<const TensorDataset*>(&test)}) {
    EXPECT_EQ(shape(ds->get(0).data), (std::vector<int64_t>{1, 28, 28}));
    EXPECT_GE(ds->targets().min().item<int64_t>(), 0);
    EXPECT_LE(ds->targets().max().item<int64_t>(), 9);
    EXPECT_GE(ds->data().min().item<double>(), 0.0);
    EXPECT_LE(ds->data().max().item<double>(), 1.0);
  }
  // Every class appears, 6000 times each in the training split.
  Tensor counts = bincount(train.targets());
  EXPECT_EQ(values(counts), std::vector<double>(10, 6000));

  // One shuffled epoch through the index_select fast path.
  auto shared = std::make_shared<FashionMNIST>();
  DataLoader loader(shared, DataLoaderOptions(100).shuffle(true).num_workers(2));
  int64_t batches = 0;
  double label_sum = 0;
  for (Example& b : loader) {
    EXPECT_EQ(shape(b.data), (std::vector<int64_t>{100, 1, 28, 28}));
    label_sum += b.target.sum().item<double>();
    ++batches;
  }
  EXPECT_EQ(batches, 600);
  EXPECT_EQ(label_sum, 6000.0 * 45);
}

// ---- datasets and samplers

TEST(Datasets, TensorDatasetBatchMatchesStackedGets) {
  auto ds = counting_dataset(10);
  EXPECT_EQ(ds->size(), 10);
  std::vector<int64_t> idx = {7, 2, 9};
  Example batch = ds->get_batch(idx, {});
  std::vector<Tensor> rows;
  for (int64_t i : idx) rows.push_back(ds->get(i).data);
  EXPECT_TRUE(all_close(batch.data, stack(rows)));
  EXPECT_EQ(values(batch.target), (std::vector<double>{7, 2, 9}));
  auto e = catch_error([&] { ds->get(10); });
  EXPECT_TRUE(contains(e.message(), {"index 10", "10 samples"}));
  auto bad = catch_error([&] { TensorDataset(zeros({3, 2}), zeros({4})); });
  EXPECT_TRUE(contains(bad.message(), {"3 samples", "4"}));
}

TEST(Samplers, SequentialAndRandom) {
  EXPECT_EQ(SequentialSampler(4).indices(7), (std::vector<int64_t>{0, 1, 2, 3}));
  RandomSampler a(1000, 5), b(1000, 5), c(1000, 6);
  auto p0 = a.indices(0);
  EXPECT_EQ(p0, b.indices(0));
  EXPECT_NE(p0, a.indices(1));
  EXPECT_NE(p0, c.indices(0));
  auto sorted = p0;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, SequentialSampler(1000).indices(0));
}

// ---- DataLoader

TEST(DataLoader, CoversEveryIndexOncePerEpoch) {
  auto ds = counting_dataset(103);
  for (bool shuffle : {false, true}) {
    for (int64_t workers : {0, 3}) {
      DataLoader loader(ds, DataLoaderOptions(10).shuffle(shuffle).num_workers(workers));
      EXPECT_EQ(loader.size(), 11);
      for (int epoch = 0; epoch < 2; ++epoch) {
        std::vector<double> seen;
        int64_t batches = 0;
        for (Example& batch : loader) {
          EXPECT_EQ(batch.data.size(0), batches == 10 ? 3 : 10);
          EXPECT_EQ(shape(batch.data).back(), 3);
          auto t = values(batch.target);
          // Each data row belongs to its target index.
          auto d = values(batch.data.select(1, 0).select(1, 0).select(1, 0));
          for (size_t k = 0; k < t.size(); ++k) EXPECT_EQ(d[k], t[k] * 6);
          seen.insert(seen.end(), t.begin(), t.end());
          ++batches;
        }
        EXPECT_EQ(batches, 11);
        if (!shuffle) {
          EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
        }
        std::sort(seen.begin(), seen.end());
        std::vector<double> want(103);
        for (int i = 0; i < 103; ++i) want[size_t(i)] = i;
        EXPECT_EQ(seen, want);
      }
    }
  }
}

TEST(DataLoader, DropLast) {
  auto ds = counting_dataset(103);
  DataLoader loader(ds, DataLoaderOptions(10).drop_last(true).shuffle(true).num_workers(2));
  EXPECT_EQ(loader.size(), 10);
  int64_t n = 0;
  for (Example& batch : loader) {
    EXPECT_EQ(batch.data.size(0), 10);
    ++n;
  }
  EXPECT_EQ(n, 10);
  DataLoader exact(counting_dataset(20), DataLoaderOptions(10).drop_last(true));
  EXPECT_EQ(exact.size(), 2);
}

TEST(DataLoader, SameBatchesForAnyWorkerCount) {
  auto base = counting_dataset(57);
  auto transform = std::make_shared<Compose>(std::vector<std::shared_ptr<Transform>>{
      std::make_shared<RandomCrop>(2, 3, 1), std::make_shared<RandomHorizontalFlip>(0.5)});
  std::shared_ptr<Dataset> ds = base->map(transform);
  auto run = [&](int64_t workers, int64_t prefetch) {
    DataLoader loader(ds, DataLoaderOptions(8).shuffle(true).seed(11).num_workers(workers)
                              .prefetch(prefetch));
    loader.set_epoch(4);
    std::vector<std::vector<double>> out;
    for (Example& b : loader) {
      out.push_back(values(b.data));
      out.push_back(values(b.target));
    }
    return out;
  };
  auto reference = run(0, 1);
  EXPECT_EQ(reference.size(), 16u);
  EXPECT_EQ(run(3, 1), reference);
  EXPECT_EQ(run(3, 4), reference);
  EXPECT_EQ(run(1, 2), reference);
}

TEST(DataLoader, ShuffleDependsOnSeedAndEpoch) {
  auto ds = counting_dataset(50);
  DataLoader a(ds, DataLoaderOptions(50).shuffle(true).seed(1));
  DataLoader b(ds, DataLoaderOptions(50).shuffle(true).seed(1).num_workers(2));
  DataLoader c(ds, DataLoaderOptions(50).shuffle(true).seed(2));
  a.set_epoch(3);
  b.set_epoch(3);
  c.set_epoch(3);
  auto ta = loader_targets(a), tb = loader_targets(b), tc = loader_targets(c);
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  // Each pass advances the epoch: a is now at epoch 4, a new permutation.
  EXPECT_EQ(a.epoch(), 4);
  EXPECT_NE(loader_targets(a), ta);
  a.set_epoch(3);
  EXPECT_EQ(loader_targets(a), ta);
}

TEST(DataLoader, GenericDatasetAndErrors) {
  auto ds = std::make_shared<SquaresDataset>(9);
  DataLoader loader(ds, DataLoaderOptions(4).num_workers(2));
  std::vector<double> firsts;
  for (Example& b : loader) {
    EXPECT_EQ(b.data.dim(), 2);
    for (double v : values(b.data.select(1, 0))) firsts.push_back(v);
  }
  EXPECT_EQ(firsts, (std::vector<double>{0, 1, 4, 9, 16, 25, 36, 49, 64}));

  // A failing sample surfaces on the consumer thread, at its batch, for any worker count.
  for (int64_t workers : {0, 2}) {
    DataLoader bad(std::make_shared<SquaresDataset>(20, 13), DataLoaderOptions(4).num_workers(workers));
    int64_t delivered = 0;
    try {
      for (Example& b : bad) {
        (void)b;
        ++delivered;
      }
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_TRUE(contains(e.what(), {"sample 13 is broken"}));
    }
    EXPECT_EQ(delivered, 3);
  }
  auto e = catch_error([&] { DataLoader(ds, DataLoaderOptions(0)); });
  EXPECT_TRUE(contains(e.message(), {"batch_size 0"}));
}

TEST(DataLoader, EarlyBreakStopsWorkers) {
  DataLoader loader(counting_dataset(1000), DataLoaderOptions(10).num_workers(3).prefetch(2));
  for (int i = 0; i < 3; ++i) {
    int n = 0;
    for (Example& b : loader) {
      (void)b;
      if (++n == 2) break;
    }
    EXPECT_EQ(n, 2);
  }
}

// ---- transforms

TEST(Transforms, HorizontalFlip) {
  Tensor x = arange(24).to(kFloat).reshape({2, 3, 4});
  Generator g(1);
  EXPECT_TRUE(all_close(RandomHorizontalFlip(1.0)(x, g), flip(x, {2})));
  EXPECT_TRUE(all_close(RandomHorizontalFlip(0.0)(x, g), x));
  // p = 0.5 flips exactly when the generator's uniform draw is below 0.5.
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Generator a(seed), b(seed);
    bool flipped = random_uniform(b) < 0.5;
    Tensor y = RandomHorizontalFlip(0.5)(x, a);
    EXPECT_TRUE(all_close(y, flipped ? flip(x, {2}) : x)) << seed;
  }
}

TEST(Transforms, RandomCropMatchesDirectIndexing) {
  Tensor x = arange(2 * 5 * 6).to(kFloat).reshape({2, 5, 6});
  for (uint64_t seed = 0; seed < 10; ++seed) {
    Generator a(seed), b(seed);
    Tensor y = RandomCrop(4, 3, 2)(x, a);
    // Padded size is 9 x 10; offsets are drawn top first, then left.
    int64_t top = random_below(b, 9 - 4 + 1), left = random_below(b, 10 - 3 + 1);
    ASSERT_EQ(shape(y), (std::vector<int64_t>{2, 4, 3}));
    auto got = values(y), src = values(x);
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 3; ++j) {
          int64_t si = top + i - 2, sj = left + j - 2;
          double want = (si >= 0 && si < 5 && sj >= 0 && sj < 6) ? src[size_t(c * 30 + si * 6 + sj)] : 0;
          EXPECT_EQ(got[size_t(c * 12 + i * 3 + j)], want) << seed;
        }
  }
  auto e = catch_error([&] { RandomCrop(7)(x); });
  EXPECT_TRUE(contains(e.message(), {"larger than the padded input"}));
}

TEST(Transforms, NormalizeMatchesDirectComputation) {
  manual_seed(0);
  Tensor x = rand({3, 4, 5});
  Tensor y = Normalize({0.1, 0.2, 0.3}, {0.5, 2.0, 4.0})(x);
  auto xv = values(x), yv = values(y);
  double mean[3] = {0.1, 0.2, 0.3}, sd[3] = {0.5, 2.0, 4.0};
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t c = i / 20;
    EXPECT_NEAR(yv[i], (xv[i] - mean[c]) / sd[c], 1e-6);
  }
  Tensor one = Normalize({0.5}, {0.25})(x);
  EXPECT_TRUE(all_close(one, (x - 0.5) / 0.25));
  auto e = catch_error([&] { Normalize({0.1, 0.2}, {1, 1})(x); });
  EXPECT_TRUE(contains(e.message(), {"2 channel means", "3 channels"}));
  EXPECT_THROW(Normalize({0.1}, {0.0}), Error);
}

TEST(Transforms, TransformDatasetSeedsPerSample) {
  auto base = counting_dataset(10);
  auto crop = std::make_shared<RandomCrop>(1, 2, 1);
  auto ds = std::dynamic_pointer_cast<TransformDataset>(base->map(crop));
  ASSERT_NE(ds, nullptr);
  Example batch = ds->get_batch({4, 1}, SampleContext{9, 2});
  for (int64_t k = 0; k < 2; ++k) {
    int64_t index = k == 0 ? 4 : 1;
    Generator g(mix_seed(9, 2, uint64_t(index), 0));
    EXPECT_TRUE(all_close(batch.data[k], crop->apply(base->get(index).data, g)));
  }
  EXPECT_EQ(values(batch.target), (std::vector<double>{4, 1}));
  EXPECT_EQ(Compose({crop, std::make_shared<RandomHorizontalFlip>()}).name(),
            "Compose(RandomCrop((1, 2), padding=1), RandomHorizontalFlip(p=0.5))");
  SquaresDataset stack_only(3);
  auto e = catch_error([&] { stack_only.map(crop); });
  EXPECT_TRUE(contains(e.message(), {"shared_ptr"}));
}
