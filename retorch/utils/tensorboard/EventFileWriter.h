// One TensorBoard event file: TFRecord-framed Event records appended to events.out.tfevents.*.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace retorch::utils::tensorboard {

/// Frames one record: u64 LE length, u32 masked CRC32C of it, the data, u32 masked CRC32C of data.
std::string frame_record(std::string_view data);

/// Seconds since the Unix epoch, with sub-second precision (an Event's wall_time).
double unix_time_now();

/// Creates log_dir (and parents), opens a fresh event file there and writes the file_version event.
class EventFileWriter {
 public:
  /// max_queue / flush_secs: flush after that many events or that many seconds since the last one.
  explicit EventFileWriter(const std::string& log_dir, const std::string& filename_suffix = "",
                           int max_queue = 10, double flush_secs = 120);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /// Appends one serialized Event.
  void add_event(std::string_view event);
  /// Appends an Event carrying a serialized Summary.
  void add_summary(std::string_view summary, int64_t step, double wall_time);
  /// Pushes buffered records to the file.
  void flush();
  /// Flushes and closes the file; later writes are errors. Idempotent.
  void close();

  /// The directory the file lives in.
  const std::string& log_dir() const { return log_dir_; }
  /// The event file's full path.
  const std::string& path() const { return path_; }

 private:
  std::string log_dir_;
  std::string path_;
  std::FILE* file_ = nullptr;
  int max_queue_;
  double flush_secs_;
  int pending_ = 0;
  double last_flush_ = 0;
};

}  // namespace retorch::utils::tensorboard
