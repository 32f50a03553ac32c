// GGUF reader: a bounds-checked parser over a memory map (every count, length, dim and offset is
// checked against the file before use), metadata values, and zero-copy tensors.
#include "retorch/io/Gguf.h"

#include <bit>
#include <cstring>
#include <limits>

#include "retorch/core/Error.h"
#include "retorch/io/MappedFile.h"

namespace retorch::io {

static_assert(std::endian::native == std::endian::little,
              "GGUF is read as little-endian; big-endian hosts would need byte swaps");

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
// Arrays of arrays are rare (no llama.cpp key uses them); the limits stop a small hostile file
// from recursing deep or from inflating 12-byte empty arrays into 100-byte values in memory.
constexpr int kMaxDepth = 8;
constexpr uint64_t kMaxNestedValues = uint64_t(1) << 20;

struct GgmlType {
  int64_t id;
  const char* name;
  int64_t block;                    // values per block
  int64_t bytes;                    // bytes per block
  std::optional<ScalarType> dtype;  // the plain element types
};

const GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4, kFloat},     {1, "F16", 1, 2, kHalf},       {2, "Q4_0", 32, 18, {}},
    {3, "Q4_1", 32, 20, {}},      {6, "Q5_0", 32, 22, {}},       {7, "Q5_1", 32, 24, {}},
    {8, "Q8_0", 32, 34, {}},      {9, "Q8_1", 32, 36, {}},       {10, "Q2_K", 256, 84, {}},
    {11, "Q3_K", 256, 110, {}},   {12, "Q4_K", 256, 144, {}},    {13, "Q5_K", 256, 176, {}},
    {14, "Q6_K", 256, 210, {}},   {15, "Q8_K", 256, 292, {}},    {16, "IQ2_XXS", 256, 66, {}},
    {17, "IQ2_XS", 256, 74, {}},  {18, "IQ3_XXS", 256, 98, {}},  {19, "IQ1_S", 256, 50, {}},
    {20, "IQ4_NL", 32, 18, {}},   {21, "IQ3_S", 256, 110, {}},   {22, "IQ2_S", 256, 82, {}},
    {23, "IQ4_XS", 256, 136, {}}, {24, "I8", 1, 1, kChar},       {25, "I16", 1, 2, kShort},
    {26, "I32", 1, 4, kInt},      {27, "I64", 1, 8, kLong},      {28, "F64", 1, 8, kDouble},
    {29, "IQ1_M", 256, 56, {}},   {30, "BF16", 1, 2, kBFloat16}, {34, "TQ1_0", 256, 54, {}},
    {35, "TQ2_0", 256, 66, {}},   {39, "MXFP4", 32, 17, {}},
};

const GgmlType* find_ggml_type(int64_t id) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

// Bytes of one scalar of a numeric/bool type; 0 for string and array.
size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    default:
      return 0;
  }
}

// The fewest file bytes one element of type t takes (a string: its length; an array: its
// element type and count), for capping counts against the bytes left.
uint64_t min_size(GgufType t) {
  if (t == GgufType::kString) return 8;
  if (t == GgufType::kArray) return 12;
  return scalar_size(t);
}

bool valid_type(uint32_t t) {
  return t <= uint32_t(GgufType::kFloat64);
}

// A key or name from the file, safe to put in a message (which Python decodes as UTF-8): bytes
// outside printable ASCII become \xNN, and very long strings are cut.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 200; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      static const char* const kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return s.size() > 200 ? out + "..." : out;
}

// A scalar's bytes (little-endian, `size` of them) as the type's value.
int64_t signed_of(uint64_t bits, GgufType t) {
  switch (t) {
    case GgufType::kInt8:
      return int8_t(uint8_t(bits));
    case GgufType::kInt16:
      return int16_t(uint16_t(bits));
    case GgufType::kInt32:
      return int32_t(uint32_t(bits));
    case GgufType::kInt64:
      return int64_t(bits);
    default:
      return 0;
  }
}

bool is_signed(GgufType t) {
  return t == GgufType::kInt8 || t == GgufType::kInt16 || t == GgufType::kInt32 ||
         t == GgufType::kInt64;
}

bool is_integer_type(GgufType t) {
  return is_signed(t) || t == GgufType::kUint8 || t == GgufType::kUint16 ||
         t == GgufType::kUint32 || t == GgufType::kUint64;
}

double float_of(uint64_t bits, GgufType t) {
  if (t == GgufType::kFloat32) return double(std::bit_cast<float>(uint32_t(bits)));
  return std::bit_cast<double>(bits);
}

}  // namespace

// ---- GgufValue

const char* gguf_type_name(GgufType t) {
  static const char* const kNames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                       "int32",  "float32", "bool",   "string", "array",
                                       "uint64", "int64",   "float64"};
  return valid_type(uint32_t(t)) ? kNames[uint32_t(t)] : "unknown";
}

bool GgufValue::is_integer() const {
  return is_integer_type(type_);
}

int64_t GgufValue::to_int() const {
  RT_CHECK_TYPE(is_integer() || is_bool(), "GGUF value: expected an integer, got ", describe());
  if (is_signed(type_)) return signed_of(bits_, type_);
  RT_CHECK_VALUE(bits_ <= uint64_t(std::numeric_limits<int64_t>::max()), "GGUF value ", bits_,
                 " does not fit in int64");
  return int64_t(bits_);
}

uint64_t GgufValue::to_uint() const {
  RT_CHECK_TYPE(is_integer() || is_bool(), "GGUF value: expected an integer, got ", describe());
  if (is_signed(type_)) {
    int64_t v = signed_of(bits_, type_);
    RT_CHECK_VALUE(v >= 0, "GGUF value ", v, " is negative, expected an unsigned integer");
    return uint64_t(v);
  }
  return bits_;
}

double GgufValue::to_float() const {
  if (is_float()) return float_of(bits_, type_);
  if (is_signed(type_)) return double(signed_of(bits_, type_));
  RT_CHECK_TYPE(is_integer(), "GGUF value: expected a number, got ", describe());
  return double(bits_);
}

bool GgufValue::to_bool() const {
  RT_CHECK_TYPE(is_bool(), "GGUF value: expected a bool, got ", describe());
  return bits_ != 0;
}

const std::string& GgufValue::to_string() const {
  RT_CHECK_TYPE(is_string(), "GGUF value: expected a string, got ", describe());
  return str_;
}

GgufValue GgufValue::at(size_t i) const {
  RT_CHECK_TYPE(is_array(), "GGUF value: expected an array, got ", describe());
  RT_CHECK_INDEX(i < count_, "GGUF array index ", i, " out of range for ", describe());
  if (elem_type_ == GgufType::kArray) return items_[i];
  GgufValue v;
  v.type_ = elem_type_;
  if (elem_type_ == GgufType::kString) {
    v.str_ = strs_[i];
  } else {
    size_t n = scalar_size(elem_type_);
    std::memcpy(&v.bits_, raw_.data() + i * n, n);
  }
  return v;
}

std::vector<int64_t> GgufValue::to_int_array() const {
  RT_CHECK_TYPE(is_array() && (is_integer_type(elem_type_) || elem_type_ == GgufType::kBool),
                "GGUF value: expected an integer array, got ", describe());
  std::vector<int64_t> out(count_);
  for (size_t i = 0; i < count_; ++i) out[i] = at(i).to_int();
  return out;
}

std::vector<double> GgufValue::to_float_array() const {
  RT_CHECK_TYPE(is_array() && (is_integer_type(elem_type_) || elem_type_ == GgufType::kFloat32 ||
                               elem_type_ == GgufType::kFloat64),
                "GGUF value: expected a numeric array, got ", describe());
  std::vector<double> out(count_);
  for (size_t i = 0; i < count_; ++i) out[i] = at(i).to_float();
  return out;
}

const std::vector<std::string>& GgufValue::to_string_array() const {
  RT_CHECK_TYPE(is_array() && elem_type_ == GgufType::kString,
                "GGUF value: expected a string array, got ", describe());
  return strs_;
}

std::string GgufValue::describe() const {
  if (!is_array()) return gguf_type_name(type_);
  return detail::str_cat("array[", gguf_type_name(elem_type_), "; ", count_, "]");
}

// ---- tensor infos

std::string ggml_type_name(int64_t type) {
  const GgmlType* t = find_ggml_type(type);
  return t ? std::string(t->name) : "type " + std::to_string(type);
}

std::vector<int64_t> GgufTensorInfo::shape() const {
  return {ne.rbegin(), ne.rend()};
}

int64_t GgufTensorInfo::rows() const {
  int64_t r = 1;
  for (size_t i = 1; i < ne.size(); ++i) r *= ne[i];  // bounded by the parser
  return r;
}

bool GgufTensorInfo::is_quantized() const {
  const GgmlType* t = find_ggml_type(type);
  return !t || !t->dtype;
}

// ---- parser

// Reads the header, metadata and tensor infos of a mapped file with every read bounds-checked.
class GgufParser {
 public:
  GgufParser(GgufFile& out, const uint8_t* data, size_t size)
      : out_(out), data_(data), size_(size), path_(out.path()) {}

  void parse() {
    uint32_t magic = read<uint32_t>("the magic number");
    if (magic != kMagic) {
      char m[5] = {};
      std::memcpy(m, &magic, 4);
      for (char& c : m)
        if (c && (c < 32 || c > 126)) c = '?';
      fail(detail::str_cat("not a GGUF file (magic '", m, "', expected 'GGUF')"));
    }
    uint32_t version = read<uint32_t>("the version");
    if (version != 2 && version != 3) {
      fail(detail::str_cat("unsupported GGUF version ", version,
                           version == 1 ? " (version 1 is obsolete; re-convert the model)"
                           : (version & 0xffff) == 0 ? " (a big-endian file? only little-endian "
                                                       "GGUF is supported)"
                                                     : "",
                           "; retorch reads versions 2 and 3"));
    }
    out_.version_ = version;
    uint64_t n_tensors = read<uint64_t>("the tensor count");
    uint64_t n_kv = read<uint64_t>("the metadata count");
    // Each tensor info takes at least 24 bytes and each key/value at least 13.
    if (n_tensors > left() / 24)
      fail(detail::str_cat("tensor count ", n_tensors, " is impossible in a ", size_,
                           "-byte file (corrupt header)"));
    if (n_kv > left() / 13)
      fail(detail::str_cat("metadata count ", n_kv, " is impossible in a ", size_,
                           "-byte file (corrupt header)"));
    for (uint64_t i = 0; i < n_kv; ++i) read_kv(i);
    read_alignment();
    for (uint64_t i = 0; i < n_tensors; ++i) read_tensor_info(i);
    const uint64_t a = out_.alignment_;
    out_.data_offset_ = (pos_ + a - 1) / a * a;
    check_tensor_ranges();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    RT_ERROR_KIND(ErrorKind::kValue, "GGUF file '", path_, "': ", what);
  }

  uint64_t left() const { return size_ - pos_; }

  void need(uint64_t n, const char* what) {
    if (n > left())
      fail(detail::str_cat("truncated: ", what, ctx_, " needs ", n, " bytes at offset ", pos_,
                           " but the file ends at ", size_));
  }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* what) {
    uint64_t n = read<uint64_t>(what);
    if (n > left())
      fail(detail::str_cat("string length ", n, " of ", what, ctx_, " at offset ", pos_ - 8,
                           " runs past the end of the file (", size_, " bytes)"));
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
    pos_ += n;
    return s;
  }

  GgufType read_type(const char* what) {
    uint32_t t = read<uint32_t>(what);
    if (!valid_type(t)) fail(detail::str_cat("unknown value type ", t, " for ", what, ctx_));
    return GgufType(t);
  }

  GgufValue read_value(GgufType type, int depth) {
    GgufValue v;
    v.type_ = type;
    if (type == GgufType::kString) {
      v.str_ = read_string("a string value");
    } else if (type != GgufType::kArray) {
      size_t n = scalar_size(type);
      need(n, "a value");
      std::memcpy(&v.bits_, data_ + pos_, n);
      pos_ += n;
    } else {
      if (depth >= kMaxDepth) fail(detail::str_cat("arrays nest deeper than ", kMaxDepth, ctx_));
      v.elem_type_ = read_type("an array element type");
      v.count_ = read<uint64_t>("an array length");
      if (v.count_ > left() / min_size(v.elem_type_))
        fail(detail::str_cat("array length ", v.count_, " of ", gguf_type_name(v.elem_type_), ctx_,
                             " at offset ", pos_ - 8, " runs past the end of the file (", size_,
                             " bytes)"));
      if (v.elem_type_ == GgufType::kString) {
        v.strs_.reserve(v.count_);
        for (uint64_t i = 0; i < v.count_; ++i) v.strs_.push_back(read_string("an array string"));
      } else if (v.elem_type_ == GgufType::kArray) {
        nested_ += v.count_;
        if (nested_ > kMaxNestedValues)
          fail(detail::str_cat("nested arrays hold more than ", kMaxNestedValues, " arrays", ctx_));
        v.items_.reserve(v.count_);
        for (uint64_t i = 0; i < v.count_; ++i)
          v.items_.push_back(read_value(GgufType::kArray, depth + 1));
      } else {
        size_t n = size_t(v.count_) * scalar_size(v.elem_type_);  // <= left(), checked above
        v.raw_.assign(data_ + pos_, data_ + pos_ + n);
        pos_ += n;
      }
    }
    return v;
  }

  void read_kv(uint64_t i) {
    ctx_ = detail::str_cat(" (metadata entry ", i, ")");
    std::string key = read_string("a metadata key");
    ctx_ = " (metadata '" + printable(key) + "')";
    GgufType type = read_type("the value type");
    GgufValue v = read_value(type, 0);
    if (out_.metadata_.count(key)) fail("duplicate metadata key '" + printable(key) + "'");
    out_.keys_.push_back(key);
    out_.metadata_.emplace(std::move(key), std::move(v));
    ctx_.clear();
  }

  void read_alignment() {
    auto it = out_.metadata_.find("general.alignment");
    if (it == out_.metadata_.end()) return;
    const GgufValue& v = it->second;
    if (v.type() != GgufType::kUint32)
      fail("general.alignment must be a uint32, got " + v.describe());
    uint64_t a = v.to_uint();
    if (a == 0 || (a & (a - 1)) != 0)
      fail(detail::str_cat("general.alignment ", a, " is not a power of two"));
    out_.alignment_ = a;
  }

  void read_tensor_info(uint64_t i) {
    ctx_ = detail::str_cat(" (tensor info ", i, ")");
    GgufTensorInfo t;
    t.name = read_string("a tensor name");
    const std::string name = printable(t.name);
    ctx_ = " (tensor '" + name + "')";
    uint32_t n_dims = read<uint32_t>("the dim count");
    if (n_dims > kMaxDims)
      fail(detail::str_cat("tensor '", name, "' has ", n_dims, " dims; GGUF allows at most ",
                           kMaxDims));
    // The product of the nonzero dims must fit in int64 too (rows() of an empty tensor).
    const uint64_t kMax = uint64_t(std::numeric_limits<int64_t>::max());
    uint64_t numel = 1, nonzero = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t n = read<uint64_t>("a dim");
      if (n > kMax || (n != 0 && nonzero > kMax / n))
        fail(detail::str_cat("tensor '", name, "' dims overflow (dim ", d, " = ", n, ")"));
      numel *= n;
      if (n != 0) nonzero *= n;
      t.ne.push_back(int64_t(n));
    }
    uint32_t type = read<uint32_t>("the tensor type");
    const GgmlType* gt = find_ggml_type(type);
    if (!gt) fail(detail::str_cat("tensor '", name, "' has unknown ggml type id ", type));
    t.type = type;
    t.offset = read<uint64_t>("the tensor offset");
    if (t.cols() % gt->block != 0)
      fail(detail::str_cat("tensor '", name, "': row length ", t.cols(),
                           " is not a multiple of the ", gt->name, " block size ", gt->block));
    // numel / block * bytes <= numel * 8 / 1, and numel < 2^63: compute in 128 bits to be safe.
    unsigned __int128 nb = (unsigned __int128)(numel / uint64_t(gt->block)) * uint64_t(gt->bytes);
    if (nb > (unsigned __int128)size_)
      fail(detail::str_cat("tensor '", name, "' of ", numel, " ", gt->name,
                           " values is larger than the file (", size_, " bytes)"));
    t.nbytes = uint64_t(nb);
    if (out_.tensor_index_.count(t.name)) fail("duplicate tensor name '" + name + "'");
    out_.tensor_index_.emplace(t.name, out_.tensors_.size());
    out_.tensors_.push_back(std::move(t));
    ctx_.clear();
  }

  void check_tensor_ranges() {
    const uint64_t start = out_.data_offset_, a = out_.alignment_;
    for (const GgufTensorInfo& t : out_.tensors_) {
      if (t.offset % a != 0)
        fail(detail::str_cat("tensor '", printable(t.name), "' offset ", t.offset,
                             " is not a multiple of the alignment ", a));
      // start <= size_ + a, offset and nbytes <= 2^64: no overflow in 128 bits.
      unsigned __int128 end = (unsigned __int128)start + t.offset + t.nbytes;
      if (end > (unsigned __int128)size_)
        fail(detail::str_cat("tensor '", printable(t.name), "' data [", t.offset, ", ",
                             (unsigned long long)(t.offset + t.nbytes), ") of the data section at ",
                             start, " runs past the end of the file (", size_,
                             " bytes; truncated?)"));
    }
  }

  GgufFile& out_;
  const uint8_t* data_;
  size_t size_;
  const std::string& path_;
  size_t pos_ = 0;
  uint64_t nested_ = 0;
  std::string ctx_;  // what is being read, for truncation messages
};

// ---- GgufFile

std::shared_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::shared_ptr<GgufFile> f(new GgufFile());
  f->file_ = MappedFile::open(path);
  GgufParser(*f, f->file_->data(), f->file_->size()).parse();
  return f;
}

const std::string& GgufFile::path() const {
  return file_->path();
}

const GgufValue& GgufFile::get(const std::string& key) const {
  auto it = metadata_.find(key);
  RT_CHECK_INDEX(it != metadata_.end(), "GGUF file '", path(), "': no metadata key '", key, "'");
  return it->second;
}

namespace {
// The value of key if its type passes `ok`, else an error naming file, key and both types.
template <typename Ok>
const GgufValue* typed(const GgufFile& f, const std::string& key, bool has_default,
                       const char* expected, Ok ok) {
  if (!f.has(key) && has_default) return nullptr;
  const GgufValue& v = f.get(key);
  RT_CHECK_TYPE(ok(v), "GGUF file '", f.path(), "': metadata '", key, "' is ", v.describe(),
                ", expected ", expected);
  return &v;
}
}  // namespace

int64_t GgufFile::get_int(const std::string& key, std::optional<int64_t> dflt) const {
  const GgufValue* v = typed(*this, key, dflt.has_value(), "an integer",
                             [](const GgufValue& x) { return x.is_integer() || x.is_bool(); });
  return v ? v->to_int() : *dflt;
}

double GgufFile::get_float(const std::string& key, std::optional<double> dflt) const {
  const GgufValue* v = typed(*this, key, dflt.has_value(), "a number",
                             [](const GgufValue& x) { return x.is_integer() || x.is_float(); });
  return v ? v->to_float() : *dflt;
}

bool GgufFile::get_bool(const std::string& key, std::optional<bool> dflt) const {
  const GgufValue* v =
      typed(*this, key, dflt.has_value(), "a bool", [](const GgufValue& x) { return x.is_bool(); });
  return v ? v->to_bool() : *dflt;
}

std::string GgufFile::get_string(const std::string& key, std::optional<std::string> dflt) const {
  const GgufValue* v = typed(*this, key, dflt.has_value(), "a string",
                             [](const GgufValue& x) { return x.is_string(); });
  return v ? v->to_string() : *dflt;
}

const std::vector<std::string>& GgufFile::get_string_array(const std::string& key) const {
  return typed(
             *this, key, false, "an array of strings",
             [](const GgufValue& x) { return x.is_array() && x.elem_type() == GgufType::kString; })
      ->to_string_array();
}

std::vector<float> GgufFile::get_float_array(const std::string& key) const {
  std::vector<double> d = typed(*this, key, false, "a numeric array", [](const GgufValue& x) {
                            return x.is_array() && (is_integer_type(x.elem_type()) ||
                                                    x.elem_type() == GgufType::kFloat32 ||
                                                    x.elem_type() == GgufType::kFloat64);
                          })->to_float_array();
  return {d.begin(), d.end()};
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  return typed(*this, key, false, "an integer array",
               [](const GgufValue& x) {
                 return x.is_array() &&
                        (is_integer_type(x.elem_type()) || x.elem_type() == GgufType::kBool);
               })
      ->to_int_array();
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Tensor GgufFile::tensor(const std::string& name) const {
  const GgufTensorInfo* t = find_tensor(name);
  RT_CHECK_INDEX(t, "GGUF file '", path(), "': no tensor named '", name, "' (the file has ",
                 tensors_.size(), " tensors)");
  return tensor(*t);
}

Tensor GgufFile::tensor(const GgufTensorInfo& info) const {
  const GgmlType* gt = find_ggml_type(info.type);
  RT_INTERNAL_ASSERT(gt);
  std::vector<int64_t> shape = info.shape();
  ScalarType dtype = kByte;
  if (gt->dtype) {
    dtype = *gt->dtype;
  } else {
    shape = {info.rows(), info.cols() / gt->block * gt->bytes};  // Note [GGUF dimension order]
  }
  uint8_t* p = file_->data() + data_offset_ + info.offset;
  if (info.nbytes == 0) return make_empty(shape, dtype);
  if (reinterpret_cast<uintptr_t>(p) % element_size(dtype) == 0) {
    // Zero-copy: see Note [Copy-on-write mapping]; the deleter keeps the mapping alive.
    std::shared_ptr<MappedFile> keep = file_;
    return from_blob(p, shape, contiguous_strides(shape), dtype, [keep](void*) {});
  }
  Tensor t = make_empty(shape, dtype);
  std::memcpy(t.data_ptr(), p, info.nbytes);
  return t;
}

}  // namespace retorch::io
