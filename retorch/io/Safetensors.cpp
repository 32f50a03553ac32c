// safetensors writer and strict, memory-mapping reader.
#include "retorch/io/Safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "retorch/core/Error.h"
#include "retorch/io/AtomicFile.h"
#include "retorch/io/MappedFile.h"

namespace retorch::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian data; big-endian hosts would need byte swaps");

namespace {

using Json = nlohmann::ordered_json;

// The reference implementation refuses headers over 100 MB; a larger one is corrupt or hostile.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

const std::pair<const char*, ScalarType> kDtypeNames[] = {
    {"F64", kDouble}, {"F32", kFloat}, {"F16", kHalf},  {"BF16", kBFloat16}, {"I64", kLong},
    {"I32", kInt},    {"I16", kShort}, {"I8", kChar},   {"U8", kByte},       {"BOOL", kBool}};

std::optional<ScalarType> parse_dtype(const std::string& name) {
  for (auto& [n, t] : kDtypeNames)
    if (name == n) return t;
  return std::nullopt;
}

struct Entry {
  std::string name;
  ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

struct Header {
  std::vector<Entry> entries;  // header order
  Metadata metadata;
  uint64_t data_start = 0;     // file offset of the byte buffer
};

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

Entry parse_entry(const std::string& path, const std::string& name, const Json& info) {
  auto where = [&] { return detail::str_cat("safetensors file '", path, "': tensor '", name, "'"); };
  RT_CHECK(info.is_object(), where(), ": expected an object with dtype, shape and data_offsets, got ",
           info.dump());
  for (const char* key : {"dtype", "shape", "data_offsets"})
    RT_CHECK(info.contains(key), where(), ": missing \"", key, "\"");
  const Json& dt = info["dtype"];
  RT_CHECK(dt.is_string(), where(), ": dtype must be a string, got ", dt.dump());
  auto dtype = parse_dtype(dt.get<std::string>());
  RT_CHECK(dtype.has_value(), where(), ": unsupported dtype '", dt.get<std::string>(),
           "' (retorch reads F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)");
  Entry e{name, *dtype, {}, 0, 0};
  const Json& shape = info["shape"];
  RT_CHECK(shape.is_array(), where(), ": shape must be a list of integers, got ", shape.dump());
  uint64_t numel = 1;
  bool overflow = false;
  for (const Json& d : shape) {
    RT_CHECK(d.is_number_unsigned(), where(), ": shape ", shape.dump(),
             " must hold non-negative integers");
    uint64_t v = d.get<uint64_t>();
    RT_CHECK(v <= uint64_t(std::numeric_limits<int64_t>::max()), where(), ": dimension ", v,
             " is too large");
    e.shape.push_back(int64_t(v));
    if (v != 0 && numel > std::numeric_limits<uint64_t>::max() / v) overflow = true;
    numel *= v;
  }
  const Json& off = info["data_offsets"];
  RT_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() &&
               off[1].is_number_unsigned(),
           where(), ": data_offsets must be two non-negative integers [begin, end], got ",
           off.dump());
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  RT_CHECK(e.begin <= e.end, where(), ": data_offsets [", e.begin, ", ", e.end,
           "] end before they begin");
  uint64_t item = element_size(e.dtype);
  bool too_big = overflow || (numel != 0 && numel > std::numeric_limits<uint64_t>::max() / item);
  RT_CHECK(!too_big && e.end - e.begin == numel * item, where(), ": data_offsets [", e.begin,
           ", ", e.end, "] hold ", e.end - e.begin, " bytes but shape ", shape_str(e.shape), " of ",
           dt.get<std::string>(), " needs ",
           too_big ? std::string("more than 2^64") : std::to_string(numel * item));
  return e;
}

// Parses and validates the header of a file whose bytes are [data, data + size).
Header parse_header(const std::string& path, const uint8_t* data, size_t size) {
  RT_CHECK(size >= 8, "safetensors file '", path, "' is ", size,
           " bytes, too short to hold the 8-byte header length");
  uint64_t n;
  std::memcpy(&n, data, 8);
  RT_CHECK(n <= size - 8, "safetensors file '", path, "': header length ", n,
           " goes past the end of the file (", size, " bytes); the file is truncated or not "
           "safetensors");
  RT_CHECK(n <= kMaxHeaderBytes, "safetensors file '", path, "': header length ", n,
           " exceeds the ", kMaxHeaderBytes, "-byte limit");
  RT_CHECK(n >= 2 && data[8] == '{', "safetensors file '", path,
           "': the header is not a JSON object (it must start with '{')");
  Json j;
  try {
    j = Json::parse(data + 8, data + 8 + n);
  } catch (const nlohmann::json::exception& e) {  // syntax errors, and numbers out of range
    RT_ERROR("safetensors file '", path, "': invalid JSON header: ", e.what());
  }
  RT_CHECK(j.is_object(), "safetensors file '", path, "': the header must be a JSON object");
  Header h;
  h.data_start = 8 + n;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      RT_CHECK(it.value().is_object(), "safetensors file '", path,
               "': __metadata__ must be an object of strings");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        RT_CHECK(m.value().is_string(), "safetensors file '", path, "': __metadata__ value for '",
                 m.key(), "' must be a string, got ", m.value().dump());
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    h.entries.push_back(parse_entry(path, it.key(), it.value()));
  }
  // The byte buffer must be exactly tiled by the tensors: sorted by offset, each one starts where
  // the previous ended, and the last ends at the end of the file.
  uint64_t buffer = size - h.data_start;
  std::vector<const Entry*> order;
  for (const Entry& e : h.entries) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : order) {
    RT_CHECK(e->end <= buffer, "safetensors file '", path, "': tensor '", e->name,
             "' data_offsets [", e->begin, ", ", e->end, "] lie outside the ", buffer,
             "-byte data buffer (the file is truncated or corrupt)");
    RT_CHECK(e->begin >= pos, "safetensors file '", path, "': tensor '", e->name,
             "' data_offsets [", e->begin, ", ", e->end, "] overlap tensor '",
             prev ? prev->name : "", "' which ends at ", pos);
    RT_CHECK(e->begin == pos, "safetensors file '", path, "': bytes [", pos, ", ", e->begin,
             ") of the data buffer belong to no tensor (a hole before tensor '", e->name, "')");
    pos = e->end;
    prev = e;
  }
  RT_CHECK(pos == buffer, "safetensors file '", path, "': the data buffer has ", buffer,
           " bytes but the tensors cover only ", pos, " (trailing bytes or a missing tensor)");
  return h;
}

SafetensorsFile load_impl(const std::string& path, bool with_tensors) {
  std::shared_ptr<MappedFile> file = MappedFile::open(path);
  Header h = parse_header(path, file->data(), file->size());
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  if (!with_tensors) return out;
  for (const Entry& e : h.entries) {
    uint8_t* p = file->data() + h.data_start + e.begin;
    size_t item = element_size(e.dtype);
    Tensor t;
    if (reinterpret_cast<uintptr_t>(p) % item == 0 && e.end > e.begin) {
      // Zero-copy: see Note [Copy-on-write mapping].
      t = from_blob(p, e.shape, contiguous_strides(e.shape), e.dtype, [file](void*) {});
    } else {
      t = make_empty(e.shape, e.dtype);
      if (e.end > e.begin) std::memcpy(t.data_ptr(), p, e.end - e.begin);
    }
    out.tensors.insert(e.name, std::move(t));
  }
  return out;
}

}  // namespace

std::string safetensors_dtype_name(ScalarType t) {
  for (auto& [n, st] : kDtypeNames)
    if (st == t) return n;
  RT_ERROR("safetensors: no dtype name for ", t);
}

namespace {

// A file ready to write: the padded header JSON, then the tensors' bytes in buffer order.
struct Layout {
  std::string header;
  std::vector<Tensor> data;  // contiguous CPU tensors, in the order their bytes are written
};

Layout plan_file(const std::string& path, const OrderedDict<Tensor>& tensors,
                 const Metadata& metadata) {
  // Write big elements first so every tensor starts aligned to its element size (the buffer
  // starts at a multiple of 8); the header keeps the caller's order.
  std::vector<Tensor> data;
  std::vector<size_t> order;
  for (const auto& item : tensors) {
    RT_CHECK(item.key != "__metadata__", "save_safetensors('", path,
             "'): '__metadata__' is reserved and cannot name a tensor");
    RT_CHECK(item.value.defined(), "save_safetensors('", path, "'): tensor '", item.key,
             "' is undefined");
    Tensor t = item.value.detach();
    if (!t.is_cpu()) t = t.to(Device(kCPU));
    data.push_back(t.contiguous());
    order.push_back(order.size());
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return data[a].element_size() > data[b].element_size();
  });
  std::vector<std::pair<uint64_t, uint64_t>> offsets(data.size());
  uint64_t pos = 0;
  for (size_t i : order) {
    uint64_t nbytes = uint64_t(data[i].numel()) * data[i].element_size();
    offsets[i] = {pos, pos + nbytes};
    pos += nbytes;
  }
  Json header = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  size_t i = 0;
  for (const auto& item : tensors) {
    const Tensor& t = data[i];
    header[item.key] = Json{{"dtype", safetensors_dtype_name(t.dtype())},
                            {"shape", t.sizes().vec()},
                            {"data_offsets", {offsets[i].first, offsets[i].second}}};
    ++i;
  }
  Layout out;
  out.header = header.dump();
  out.header.append((8 - (8 + out.header.size()) % 8) % 8, ' ');
  for (size_t k : order) out.data.push_back(data[k]);
  return out;
}

size_t nbytes(const Tensor& t) { return size_t(t.numel()) * t.element_size(); }

}  // namespace

void save_safetensors(const std::string& path, const OrderedDict<Tensor>& tensors,
                      const Metadata& metadata) {
  Layout layout = plan_file(path, tensors, metadata);
  uint64_t n = layout.header.size();
  atomic_write(path, [&](std::FILE* f) {
    write_all(f, &n, 8, path);
    write_all(f, layout.header.data(), layout.header.size(), path);
    for (const Tensor& t : layout.data) write_all(f, t.data_ptr(), nbytes(t), path);
  });
}

std::string save_safetensors_bytes(const OrderedDict<Tensor>& tensors, const Metadata& metadata) {
  Layout layout = plan_file("<bytes>", tensors, metadata);
  uint64_t n = layout.header.size();
  size_t total = 8 + layout.header.size();
  for (const Tensor& t : layout.data) total += nbytes(t);
  std::string out;
  out.reserve(total);
  out.append(reinterpret_cast<const char*>(&n), 8);
  out += layout.header;
  for (const Tensor& t : layout.data)
    out.append(static_cast<const char*>(t.data_ptr()), nbytes(t));
  return out;
}

SafetensorsFile load_safetensors_bytes(const uint8_t* data, size_t size, const std::string& name) {
  Header h = parse_header(name, data, size);
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  for (const Entry& e : h.entries) {
    Tensor t = make_empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data + h.data_start + e.begin, e.end - e.begin);
    out.tensors.insert(e.name, std::move(t));
  }
  return out;
}

SafetensorsFile load_safetensors_file(const std::string& path) { return load_impl(path, true); }

OrderedDict<Tensor> load_safetensors(const std::string& path) {
  return load_impl(path, true).tensors;
}

Metadata load_safetensors_metadata(const std::string& path) {
  return load_impl(path, false).metadata;
}

void save(const OrderedDict<Tensor>& tensors, const std::string& path) {
  save_safetensors(path, tensors);
}

OrderedDict<Tensor> load(const std::string& path) { return load_safetensors(path); }

}  // namespace retorch::io
