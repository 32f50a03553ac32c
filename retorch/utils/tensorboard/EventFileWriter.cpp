// Event files: directory creation, the torch/TensorFlow file name, record framing, flushing.
#include "retorch/utils/tensorboard/EventFileWriter.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "retorch/core/Error.h"
#include "retorch/utils/tensorboard/Crc32c.h"
#include "retorch/utils/tensorboard/Summary.h"

namespace retorch::utils::tensorboard {

namespace {

void append_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char(uint8_t(v >> (8 * i))));
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// Two writers opened in the same second by the same process still get distinct files.
std::atomic<int64_t> g_file_counter{0};

}  // namespace

std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  uint64_t n = data.size();
  for (int i = 0; i < 8; ++i) out.push_back(char(uint8_t(n >> (8 * i))));
  append_u32(out, masked_crc32c(std::string_view(out.data(), 8)));
  out.append(data.data(), data.size());
  append_u32(out, masked_crc32c(data));
  return out;
}

double unix_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

EventFileWriter::EventFileWriter(const std::string& log_dir, const std::string& filename_suffix,
                                 int max_queue, double flush_secs)
    : log_dir_(log_dir), max_queue_(max_queue), flush_secs_(flush_secs) {
  namespace fs = std::filesystem;
  RT_CHECK_VALUE(!log_dir.empty(), "SummaryWriter: log_dir must not be empty");
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  RT_CHECK(fs::is_directory(log_dir), "SummaryWriter: cannot create log directory '", log_dir,
           "': ", ec ? ec.message() : std::string("a file with that name exists"));
  double now = unix_time_now();
  char name[512];
  std::snprintf(name, sizeof(name), "events.out.tfevents.%010lld.%s.%d.%lld%s",
                static_cast<long long>(now), host_name().c_str(), int(getpid()),
                static_cast<long long>(g_file_counter++), filename_suffix.c_str());
  path_ = (fs::path(log_dir) / name).string();
  file_ = std::fopen(path_.c_str(), "wb");
  RT_CHECK(file_ != nullptr, "SummaryWriter: cannot open event file '", path_,
           "' for writing: ", std::strerror(errno));
  last_flush_ = now;
  add_event(file_version_event(now));
  flush();
}

EventFileWriter::~EventFileWriter() {
  try {
    close();
  } catch (...) {
    // A destructor cannot report a failed final flush; close() called explicitly does.
  }
}

void EventFileWriter::add_event(std::string_view event) {
  RT_CHECK(file_ != nullptr, "SummaryWriter: event file '", path_, "' is closed");
  std::string rec = frame_record(event);
  size_t written = std::fwrite(rec.data(), 1, rec.size(), file_);
  RT_CHECK(written == rec.size(), "SummaryWriter: writing to '", path_,
           "' failed: ", std::strerror(errno));
  ++pending_;
  if (pending_ >= max_queue_ || unix_time_now() - last_flush_ >= flush_secs_) flush();
}

void EventFileWriter::add_summary(std::string_view summary, int64_t step, double wall_time) {
  add_event(summary_event(wall_time, step, summary));
}

void EventFileWriter::flush() {
  if (file_ == nullptr) return;
  RT_CHECK(std::fflush(file_) == 0, "SummaryWriter: flushing '", path_,
           "' failed: ", std::strerror(errno));
  pending_ = 0;
  last_flush_ = unix_time_now();
}

void EventFileWriter::close() {
  if (file_ == nullptr) return;
  std::FILE* f = file_;
  file_ = nullptr;
  int flushed = std::fflush(f);
  int err = errno;
  int closed = std::fclose(f);
  RT_CHECK(flushed == 0 && closed == 0, "SummaryWriter: closing '", path_,
           "' failed: ", std::strerror(flushed != 0 ? err : errno));
}

}  // namespace retorch::utils::tensorboard
