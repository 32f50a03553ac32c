// DataLoader: in-order delivery of batches loaded ahead by worker threads.
#include "retorch/data/DataLoader.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "retorch/autograd/GradMode.h"
#include "retorch/core/Error.h"

namespace retorch::data {

// Note [DataLoader ordering]
// Workers claim batch numbers from a shared counter and each stores its result in that batch's
// slot; the consumer takes slots strictly in order. A batch's content is a function of its
// indices and the (seed, epoch) context only (see Note [Data randomness]), so the delivered
// sequence is the same for any num_workers and any timing. Workers may run at most
// num_workers * prefetch batches ahead of the batch the consumer holds, which bounds memory.
class EpochRun {
 public:
  EpochRun(const DataLoader& loader, int64_t epoch)
      : dataset_(loader.dataset()), ctx_{loader.options().seed(), epoch},
        batches_(loader.batch_indices(epoch)),
        slots_(batches_.size()) {
    int64_t workers = loader.options().num_workers();
    window_ = size_t(std::max<int64_t>(1, workers * loader.options().prefetch()));
    for (int64_t w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  }

  ~EpochRun() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    space_.notify_all();
    for (auto& t : threads_) t.join();
  }

  bool done() const { return next_ >= batches_.size(); }

  Example& current() {
    RT_CHECK(!done(), "DataLoader: dereferencing an iterator past the last batch");
    if (current_) return *current_;
    if (threads_.empty()) {
      current_ = load(next_);
      return *current_;
    }
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return slots_[next_].ready; });
    Slot slot = std::move(slots_[next_]);
    slots_[next_] = Slot{};
    lock.unlock();
    if (slot.error) std::rethrow_exception(slot.error);
    current_ = std::move(slot.batch);
    return *current_;
  }

  void advance() {
    if (!current_ && !done()) current();  // a skipped batch still surfaces its error
    current_.reset();
    {
      std::lock_guard<std::mutex> g(mu_);
      ++next_;
    }
    space_.notify_all();
  }

 private:
  struct Slot {
    bool ready = false;
    std::optional<Example> batch;
    std::exception_ptr error;
  };

  Example load(size_t b) const { return dataset_->get_batch(batches_[b], ctx_); }

  void work() {
    NoGradGuard no_grad;
    while (true) {
      size_t b;
      {
        std::unique_lock<std::mutex> lock(mu_);
        space_.wait(lock, [&] {
          return stop_ || claim_ >= batches_.size() || claim_ < next_ + window_;
        });
        if (stop_ || claim_ >= batches_.size()) return;
        b = claim_++;
      }
      Slot slot;
      try {
        slot.batch = load(b);
      } catch (...) {
        slot.error = std::current_exception();
      }
      slot.ready = true;
      {
        std::lock_guard<std::mutex> g(mu_);
        slots_[b] = std::move(slot);
      }
      ready_.notify_all();
    }
  }

  std::shared_ptr<Dataset> dataset_;  // its own reference: the run may outlive the loader
  SampleContext ctx_;
  std::vector<std::vector<int64_t>> batches_;
  std::vector<Slot> slots_;
  size_t window_ = 1;
  size_t next_ = 0;   // the batch the consumer is on
  size_t claim_ = 0;  // the next batch a worker will load
  bool stop_ = false;
  std::optional<Example> current_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::vector<std::thread> threads_;
};

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : DataLoader(dataset, nullptr, options) {}

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler,
                       DataLoaderOptions options)
    : dataset_(std::move(dataset)), sampler_(std::move(sampler)), options_(options) {
  RT_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  RT_CHECK(options_.batch_size() > 0, "DataLoader: batch_size ", options_.batch_size(),
           " must be positive");
  RT_CHECK(options_.num_workers() >= 0, "DataLoader: num_workers ", options_.num_workers(),
           " must be non-negative");
  RT_CHECK(options_.prefetch() >= 1, "DataLoader: prefetch ", options_.prefetch(),
           " must be at least 1");
  if (sampler_) {
    RT_CHECK(!options_.shuffle(), "DataLoader: shuffle(true) cannot be combined with a sampler");
    RT_CHECK(sampler_->size() == dataset_->size(), "DataLoader: the sampler has ",
             sampler_->size(), " indices but the dataset has ", dataset_->size(), " samples");
  } else if (options_.shuffle()) {
    sampler_ = std::make_shared<RandomSampler>(dataset_->size(), options_.seed());
  } else {
    sampler_ = std::make_shared<SequentialSampler>(dataset_->size());
  }
}

int64_t DataLoader::size() const {
  int64_t n = sampler_->size(), b = options_.batch_size();
  return options_.drop_last() ? n / b : (n + b - 1) / b;
}

std::vector<std::vector<int64_t>> DataLoader::batch_indices(int64_t epoch) const {
  std::vector<int64_t> order = sampler_->indices(epoch);
  std::vector<std::vector<int64_t>> out;
  size_t b = size_t(options_.batch_size());
  for (size_t start = 0; start < order.size(); start += b) {
    size_t stop = std::min(order.size(), start + b);
    if (stop - start < b && options_.drop_last()) break;
    out.emplace_back(order.begin() + std::ptrdiff_t(start), order.begin() + std::ptrdiff_t(stop));
  }
  return out;
}

Example DataLoader::load_batch(const std::vector<int64_t>& indices, int64_t epoch) const {
  return dataset_->get_batch(indices, SampleContext{options_.seed(), epoch});
}

DataLoader::Iterator DataLoader::begin() {
  auto run = std::make_shared<EpochRun>(*this, epoch_);
  ++epoch_;
  return Iterator(std::move(run));
}

Example& DataLoader::Iterator::operator*() const {
  RT_CHECK(run_ != nullptr, "DataLoader: dereferencing an end iterator");
  return run_->current();
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  RT_CHECK(run_ != nullptr, "DataLoader: incrementing an end iterator");
  run_->advance();
  return *this;
}

bool DataLoader::Iterator::at_end() const { return run_ == nullptr || run_->done(); }

bool DataLoader::Iterator::operator==(const Iterator& o) const {
  if (at_end() || o.at_end()) return at_end() == o.at_end();
  return run_ == o.run_;
}

}  // namespace retorch::data
