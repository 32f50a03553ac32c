// The profiler's statistics and tables: key_averages, PyTorch's op table, Nsight's kernel
// summary, and the helpers behind them (median, sample stddev, human time units).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>

#include "retorch/core/Allocator.h"
#include "retorch/core/Error.h"
#include "retorch/profiler/Profiler.h"

namespace retorch::profiler {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / double(v.size() - 1));
}

std::string format_bytes(int64_t bytes) {
  char buf[32];
  const double b = double(bytes), a = std::abs(b);
  if (a < 1024) std::snprintf(buf, sizeof buf, "%lld b", static_cast<long long>(bytes));
  else if (a < 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f Kb", b / 1024);
  else if (a < 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f Mb", b / (1024.0 * 1024));
  else std::snprintf(buf, sizeof buf, "%.2f Gb", b / (1024.0 * 1024 * 1024));
  return buf;
}

std::string memory_summary(Device device) {
  const AllocatorStats st = allocator_for(device)->stats();
  std::ostringstream os;
  os << "|===========================================================================|\n"
     << "|                  retorch memory summary, device " << device << "\n"
     << "|---------------------------------------------------------------------------|\n";
  char line[200];
  std::snprintf(line, sizeof line, "| %-22s | %12s | %12s | %12s | %12s |\n", "Metric", "Cur Usage",
                "Peak Usage", "Tot Alloc", "Tot Freed");
  os << line << "|---------------------------------------------------------------------------|\n";
  std::snprintf(line, sizeof line, "| %-22s | %12s | %12s | %12s | %12s |\n", "Allocated memory",
                format_bytes(st.allocated_bytes).c_str(), format_bytes(st.peak_allocated_bytes).c_str(),
                format_bytes(st.total_allocated_bytes).c_str(), format_bytes(st.total_freed_bytes).c_str());
  os << line;
  std::snprintf(line, sizeof line, "| %-22s | %12s | %12s | %12s | %12s |\n", "Reserved memory",
                format_bytes(st.reserved_bytes).c_str(), format_bytes(st.peak_reserved_bytes).c_str(),
                "", "");
  os << line;
  std::snprintf(line, sizeof line, "| %-22s | %12lld | %12s | %12lld | %12lld |\n", "Allocations",
                static_cast<long long>(st.num_allocs - st.num_frees), "",
                static_cast<long long>(st.num_allocs), static_cast<long long>(st.num_frees));
  os << line;
  std::snprintf(line, sizeof line, "| %-22s | %12s | %12s | %12lld | %12s |\n",
                "OS allocations (misses)", "", "", static_cast<long long>(st.num_os_allocs), "");
  os << line << "|===========================================================================|\n";
  return os.str();
}

std::string format_time(double ns) {
  char buf[32];
  if (ns < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.3f μs", ns / 1e3);
  else if (ns < 1e9) std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  return buf;
}

namespace {

// Statistics of groups of events (all, or those of one kind), in order of first appearance;
// `self` takes each event's self time as its sample (else its duration).
std::vector<EventStats> group(const std::vector<Event>& events, bool by_shape,
                              const std::string& kind, bool self) {
  std::map<std::pair<std::string, std::string>, size_t> index;
  std::vector<EventStats> stats;
  std::vector<std::vector<double>> durations;
  for (const Event& e : events) {
    if (!kind.empty() && e.kind != kind) continue;
    auto key = std::make_pair(e.name, by_shape ? e.shapes : std::string());
    auto [it, fresh] = index.emplace(key, stats.size());
    if (fresh) {
      stats.push_back({e.name, key.second});
      durations.emplace_back();
    }
    EventStats& s = stats[it->second];
    ++s.count;
    s.total_ns += double(e.duration_ns());
    s.self_ns += double(e.self_ns);
    s.mem_bytes += e.mem_bytes;
    s.self_mem_bytes += e.self_mem_bytes;
    durations[it->second].push_back(double(self ? e.self_ns : e.duration_ns()));
  }
  for (size_t i = 0; i < stats.size(); ++i) {
    const std::vector<double>& d = durations[i];
    EventStats& s = stats[i];
    s.avg_ns = s.total_ns / double(s.count);
    s.median_ns = median(d);
    s.min_ns = *std::min_element(d.begin(), d.end());
    s.max_ns = *std::max_element(d.begin(), d.end());
    s.stddev_ns = stddev(d);
  }
  return stats;
}

// PyTorch's time format in its tables: "3.000ms", "12.345us".
std::string torch_time(double ns) {
  char buf[32];
  if (ns >= 1e9) std::snprintf(buf, sizeof buf, "%.3fs", ns / 1e9);
  else if (ns >= 1e6) std::snprintf(buf, sizeof buf, "%.3fms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3fus", ns / 1e3);
  return buf;
}

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", whole > 0 ? 100 * part / whole : 0.0);
  return buf;
}

// Rows of cells as right-aligned columns (the last column left-aligned when `last_left`) between
// dashed rules, as PyTorch and Nsight print them.
std::string render(const std::vector<std::vector<std::string>>& rows, bool last_left) {
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      size_t len = 0;  // code points, so "μs" counts as two
      for (unsigned char ch : r[c]) len += (ch & 0xC0) != 0x80;
      width[c] = std::max(width[c], len);
    }
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t c = 0; c < r.size(); ++c) {
      size_t len = 0;
      for (unsigned char ch : r[c]) len += (ch & 0xC0) != 0x80;
      std::string pad(width[c] - len, ' ');
      s += (c ? "  " : "") + (last_left && c + 1 == r.size() ? r[c] + pad : pad + r[c]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string rule;
  for (size_t c = 0; c < width.size(); ++c) rule += (c ? "  " : "") + std::string(width[c], '-');
  rule += "\n";
  std::string out = rule + line(rows[0]) + rule;
  for (size_t i = 1; i < rows.size(); ++i) out += line(rows[i]);
  return out + rule;
}

}  // namespace

std::vector<EventStats> sort_stats(std::vector<EventStats> stats, const std::string& sort_by) {
  auto by = [&](auto key) {
    std::stable_sort(stats.begin(), stats.end(),
                     [&](const EventStats& a, const EventStats& b) { return key(a) > key(b); });
  };
  if (sort_by == "self_cpu_time_total") by([](const EventStats& s) { return s.self_ns; });
  else if (sort_by == "cpu_time_total") by([](const EventStats& s) { return s.total_ns; });
  else if (sort_by == "cpu_time_avg") by([](const EventStats& s) { return s.avg_ns; });
  else if (sort_by == "count") by([](const EventStats& s) { return double(s.count); });
  else if (sort_by == "name")
    std::stable_sort(stats.begin(), stats.end(),
                     [](const EventStats& a, const EventStats& b) { return a.name < b.name; });
  else
    RT_CHECK(false, "profiler: unknown sort_by '", sort_by, "' (choose one of "
             "self_cpu_time_total, cpu_time_total, cpu_time_avg, count, name)");
  return stats;
}

std::vector<EventStats> Profile::key_averages(bool group_by_input_shape,
                                              const std::string& sort_by) const {
  return sort_stats(group(events(), group_by_input_shape, "", false), sort_by);
}

std::string Profile::table(const std::string& sort_by, int row_limit,
                           bool group_by_input_shape) const {
  std::vector<EventStats> stats = key_averages(group_by_input_shape, sort_by);
  double self_total = 0;
  for (const EventStats& s : stats) self_total += s.self_ns;
  const bool memory = profiles_memory();
  std::vector<std::vector<std::string>> rows = {{"Name", "Self CPU %", "Self CPU", "CPU total %",
                                                 "CPU total", "CPU time avg"}};
  if (memory) rows[0].insert(rows[0].end(), {"CPU Mem", "Self CPU Mem"});
  rows[0].push_back("# of Calls");
  if (group_by_input_shape) rows[0].push_back("Input Shapes");
  for (const EventStats& s : stats) {
    if (row_limit >= 0 && int(rows.size()) > row_limit) break;
    rows.push_back({s.name, percent(s.self_ns, self_total), torch_time(s.self_ns),
                    percent(s.total_ns, self_total), torch_time(s.total_ns),
                    torch_time(s.avg_ns)});
    if (memory)
      rows.back().insert(rows.back().end(), {format_bytes(s.mem_bytes), format_bytes(s.self_mem_bytes)});
    rows.back().push_back(std::to_string(s.count));
    if (group_by_input_shape) rows.back().push_back(s.shapes);
  }
  return render(rows, group_by_input_shape) + "Self CPU time total: " + torch_time(self_total) +
         "\n";
}

std::string Profile::table_csv(bool group_by_input_shape) const {
  std::vector<EventStats> stats = key_averages(group_by_input_shape);
  double self_total = 0;
  for (const EventStats& s : stats) self_total += s.self_ns;
  auto quoted = [](const std::string& v) {  // RFC 4180: quotes doubled inside quotes
    std::string q = "\"";
    for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::ostringstream os;
  os << "Name,Self CPU %,Self CPU (us),CPU total %,CPU total (us),CPU time avg (us),# of Calls";
  if (group_by_input_shape) os << ",Input Shapes";
  os << "\n";
  char buf[160];
  for (const EventStats& s : stats) {
    std::snprintf(buf, sizeof buf, ",%.2f,%.3f,%.2f,%.3f,%.3f,%lld",
                  self_total > 0 ? 100 * s.self_ns / self_total : 0.0, s.self_ns / 1e3,
                  self_total > 0 ? 100 * s.total_ns / self_total : 0.0, s.total_ns / 1e3,
                  s.avg_ns / 1e3, static_cast<long long>(s.count));
    os << quoted(s.name) << buf;
    if (group_by_input_shape) os << "," << quoted(s.shapes);
    os << "\n";
  }
  return os.str();
}

std::string Profile::kernel_summary(int row_limit, bool by_op) const {
  // Kernel self times (a kernel whose op calls another op's kernel does not count it twice),
  // named by kernel or by the op that issued it.
  std::vector<Event> ev = events();
  for (Event& e : ev) {
    if (e.kind != "kernel") continue;
    if (by_op) e.name = e.op;
    if (e.device_ns >= 0) {  // See Note [Kernel time on the device]
      e.self_ns = e.device_ns;
      e.end_ns = e.start_ns + e.device_ns;
    }
  }
  std::vector<EventStats> stats = sort_stats(group(ev, false, "kernel", true), "self_cpu_time_total");
  auto time = [](const EventStats& s) { return s.self_ns; };
  double total = 0;
  for (const EventStats& s : stats) total += time(s);
  std::vector<std::vector<std::string>> rows = {
      {"Time %", "Total Time", "Instances", "Avg", "Med", "Min", "Max", "StdDev", "Name"}};
  for (const EventStats& s : stats) {
    if (row_limit >= 0 && int(rows.size()) > row_limit) break;
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.1f", total > 0 ? 100 * time(s) / total : 0.0);
    rows.push_back({pct, format_time(time(s)), std::to_string(s.count),
                    format_time(time(s) / double(s.count)), format_time(s.median_ns),
                    format_time(s.min_ns), format_time(s.max_ns), format_time(s.stddev_ns),
                    s.name});
  }
  return render(rows, true);
}

}  // namespace retorch::profiler
