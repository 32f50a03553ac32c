// Reads PyTorch's graph text form (what Printer.cpp prints) back into a Graph: a hand-written
// recursive-descent reader over characters that names the line and column in every error.
#include "retorch/jit/Parser.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "retorch/generated/Functions.h"
#include "retorch/jit/Schema.h"

namespace retorch::jit {

namespace {

// Nesting limits keep the recursion here, in Type::str and in lint/destroy far from the end of
// the stack whatever the input.
constexpr int kMaxTypeDepth = 32;
constexpr int kMaxBlockDepth = 64;
constexpr uint64_t kMaxValueNumber = uint64_t(1) << 40;

bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_char(char c) {
  return is_alpha(c) || is_digit(c);
}
bool is_name_char(char c) {
  return is_ident_char(c) || c == '.';
}
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

// An attribute value as written, before the node's output type turns it into an IValue.
struct Literal {
  enum Kind { kNone, kInt, kDouble, kStr, kIntList, kDoubleList, kScalarTensor, kTensorRef };
  Kind kind = kNone;
  bool is_double = false;  // kScalarTensor: {2.5} rather than {2}
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  Tensor tensor;  // kTensorRef
};

// A value name as written: %x (a debug name) or %3 (a number, printed from Value::unique()).
struct ValueRef {
  std::string key;  // the name, or the number in canonical decimal
  bool numbered = false;
  size_t number = 0;
  size_t at = 0;
};

// "cpu", "cuda", "cuda:1"; nullopt if malformed.
std::optional<Device> device_from(std::string_view s) {
  size_t colon = s.find(':');
  std::string_view type = s.substr(0, colon);
  Device d;
  if (type == "cpu")
    d.type = kCPU;
  else if (type == "cuda")
    d.type = kCUDA;
  else
    return std::nullopt;
  if (colon == std::string_view::npos) return d;
  std::string_view idx = s.substr(colon + 1);
  if (idx.empty() || idx.size() > 3) return std::nullopt;
  int v = 0;
  for (char c : idx) {
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > std::numeric_limits<int8_t>::max()) return std::nullopt;
  d.index = int8_t(v);
  return d;
}

class Parser {
 public:
  Parser(std::string_view text, const std::vector<Tensor>* consts) : s_(text), consts_(consts) {}

  std::unique_ptr<Graph> graph();
  TypePtr whole_type() {
    TypePtr t = type(0);
    skip_ws();
    if (!at_end()) fail("expected the end of the type, found ", found());
    return t;
  }

 private:
  // ---------------------------------------------------------------- errors
  template <typename... Args>
  [[noreturn]] void fail_at(size_t at, const Args&... args) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) col = s_[i] == '\n' ? (++line, 1) : col + 1;
    RT_ERROR("jit: parse error at line ", line, ", column ", col, ": ", args...);
  }
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    fail_at(pos_, args...);
  }
  // The text at the cursor, quoted, for "found ..." in errors.
  std::string found() const {
    if (at_end()) return "the end of the text";
    std::string r = "'";
    for (size_t i = pos_; i < s_.size() && i < pos_ + 16; ++i) {
      char c = s_[i];
      if (i > pos_ && is_space(c)) break;
      r += c >= 0x20 && c < 0x7f ? c : '?';
    }
    return r + "'";
  }

  // ---------------------------------------------------------------- characters
  bool at_end() const { return pos_ >= s_.size(); }
  char peek(size_t k = 0) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }
  // Skips whitespace and "# ..." comments (a node's location comment is read before this runs).
  void skip_ws() {
    while (!at_end()) {
      if (is_space(s_[pos_])) {
        ++pos_;
      } else if (s_[pos_] == '#') {
        while (!at_end() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  bool lookahead(std::string_view tok) {
    skip_ws();
    return s_.substr(pos_, tok.size()) == tok;
  }
  bool accept(std::string_view tok) {
    if (!lookahead(tok)) return false;
    pos_ += tok.size();
    return true;
  }
  // Like accept, but only a whole word: "return" does not match "returns".
  bool accept_keyword(std::string_view kw) {
    if (!lookahead(kw) || is_ident_char(peek(kw.size()))) return false;
    pos_ += kw.size();
    return true;
  }
  template <typename... Args>
  void expect(std::string_view tok, const Args&... what) {
    if (!accept(tok)) fail("expected '", tok, "' ", what..., ", found ", found());
  }
  std::string ident(const char* what) {
    skip_ws();
    size_t start = pos_;
    if (!is_alpha(peek())) fail("expected ", what, ", found ", found());
    while (is_ident_char(peek())) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  int64_t integer(bool allow_negative);
  Literal number();
  std::string string_literal();

  // ---------------------------------------------------------------- grammar
  TypePtr type(int level);
  TypePtr tensor_type(std::optional<ScalarType> dtype);
  Literal literal();
  IValue natural_value(const Literal& l, size_t at);
  IValue typed_constant(const Literal& l, const TypePtr& t, size_t at);
  IValue scalar_tensor(const Literal& l, std::optional<ScalarType> dtype, size_t at);
  ValueRef value_name();
  Value* lookup(const ValueRef& r);
  void define(const ValueRef& r, Value* v, bool visible = true);
  void make_visible(const std::string& key, Value* v);
  std::vector<Value*> value_list(const char* what);
  void statements(Block* b, int depth, bool top);
  // "(%a : T, ...):" after `graph` or `blockN`: b's inputs.
  void block_inputs(Block* b, const char* what);
  void node(Block* b, int depth);
  void block(Node* n, size_t index, int depth);

  std::string_view s_;
  size_t pos_ = 0;
  const std::vector<Tensor>* consts_;
  size_t next_const_ = 0;
  Graph* g_ = nullptr;
  // Value names in scope; the names ever defined (names are unique graph-wide); one list of the
  // names each open block defined, dropped when the block closes.
  std::unordered_map<std::string, Value*> env_;
  std::unordered_set<std::string> ever_;
  std::unordered_set<std::string> out_of_scope_;
  std::vector<std::vector<std::string>> scopes_;
  std::vector<std::pair<Value*, size_t>> numbers_;
};

// ---------------------------------------------------------------- literals

int64_t Parser::integer(bool allow_negative) {
  skip_ws();
  size_t start = pos_;
  bool neg = false;
  if (allow_negative && peek() == '-') {
    neg = true;
    ++pos_;
  }
  if (!is_digit(peek())) fail("expected an integer, found ", found());
  uint64_t v = 0;
  const uint64_t limit = neg ? uint64_t(1) << 63 : (uint64_t(1) << 63) - 1;
  while (is_digit(peek())) {
    uint64_t d = uint64_t(peek() - '0');
    if (v > (limit - d) / 10) fail_at(start, "integer out of range");
    v = v * 10 + d;
    ++pos_;
  }
  return neg ? int64_t(0 - v) : int64_t(v);
}

// An int or a float as the printer writes them: 3, -2, 1., 0.25, 1e-05, inf, -inf, nan.
Literal Parser::number() {
  skip_ws();
  size_t start = pos_;
  Literal l;
  l.kind = Literal::kDouble;
  bool neg = peek() == '-';
  size_t p = pos_ + (neg ? 1 : 0);
  auto word = [&](std::string_view w) {
    return s_.substr(p, w.size()) == w &&
           (p + w.size() >= s_.size() || !is_ident_char(s_[p + w.size()]));
  };
  if (word("inf")) {
    l.d = neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    pos_ = p + 3;
    return l;
  }
  if (!neg && word("nan")) {
    l.d = std::numeric_limits<double>::quiet_NaN();
    pos_ = p + 3;
    return l;
  }
  size_t digits = 0;
  while (p < s_.size() && is_digit(s_[p])) ++p, ++digits;
  bool is_float = false;
  if (p < s_.size() && s_[p] == '.') {
    is_float = true;
    ++p;
    while (p < s_.size() && is_digit(s_[p])) ++p, ++digits;
  }
  if (digits == 0) fail("expected a number, found ", found());
  if (p < s_.size() && (s_[p] == 'e' || s_[p] == 'E')) {
    size_t q = p + 1;
    if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
    if (q >= s_.size() || !is_digit(s_[q])) fail_at(p, "expected the exponent's digits");
    while (q < s_.size() && is_digit(s_[q])) ++q;
    p = q;
    is_float = true;
  }
  if (!is_float) {
    l.kind = Literal::kInt;
    l.i = integer(true);
    return l;
  }
  std::string text(s_.substr(start, p - start));
  l.d = std::strtod(text.c_str(), nullptr);  // out of range gives +-inf or 0, as Python does
  pos_ = p;
  return l;
}

std::string Parser::string_literal() {
  skip_ws();
  size_t start = pos_;
  if (peek() != '"') fail("expected a string, found ", found());
  ++pos_;
  std::string r;
  for (;;) {
    if (at_end()) fail_at(start, "unterminated string");
    char c = s_[pos_++];
    if (c == '"') return r;
    if (c != '\\') {
      r += c;
      continue;
    }
    if (at_end()) fail_at(start, "unterminated string");
    char e = s_[pos_++];
    // The escapes the printer writes, plus \' and \r.
    static constexpr std::string_view kEscaped = "\"\\'ntr", kMeaning = "\"\\'\n\t\r";
    size_t k = e == '\0' ? std::string_view::npos : kEscaped.find(e);
    if (k == std::string_view::npos)
      fail_at(pos_ - 2, "unknown escape sequence in a string (known: \\\" \\\\ \\' \\n \\t \\r)");
    r += kMeaning[k];
  }
}

Literal Parser::literal() {
  skip_ws();
  size_t at = pos_;
  Literal l;
  char c = peek();
  if (c == '"') {
    l.kind = Literal::kStr;
    l.s = string_literal();
  } else if (c == '[') {
    ++pos_;
    l.kind = Literal::kIntList;
    std::vector<Literal> items;
    bool any_double = false;
    if (!accept("]")) {
      do {
        items.push_back(number());
        any_double = any_double || items.back().kind == Literal::kDouble;
      } while (accept(","));
      expect("]", "closing the list");
    }
    if (any_double) l.kind = Literal::kDoubleList;
    for (const Literal& x : items) {
      if (any_double)
        l.doubles.push_back(x.kind == Literal::kDouble ? x.d : double(x.i));
      else
        l.ints.push_back(x.i);
    }
  } else if (c == '{') {
    ++pos_;
    Literal n = number();
    expect("}", "closing the scalar tensor");
    l.kind = Literal::kScalarTensor;
    l.is_double = n.kind == Literal::kDouble;
    l.i = n.i;
    l.d = n.d;
  } else if (c == '<') {
    if (!accept("<Tensor>")) fail("expected <Tensor>, found ", found());
    if (consts_ == nullptr)
      fail_at(at, "a <Tensor> constant, but no tensor constants were given to the parser");
    if (next_const_ >= consts_->size())
      fail_at(at, "a <Tensor> constant, but only ", consts_->size(),
              " tensor constants were given to the parser");
    l.kind = Literal::kTensorRef;
    l.tensor = (*consts_)[next_const_++];
  } else if (accept_keyword("None")) {
    l.kind = Literal::kNone;
  } else if (c == '-' || is_digit(c) || c == 'i' || c == 'n') {
    l = number();
  } else {
    fail("expected an attribute value (a number, string, list, {scalar}, <Tensor> or None), found ",
         found());
  }
  return l;
}

IValue Parser::scalar_tensor(const Literal& l, std::optional<ScalarType> dtype, size_t at) {
  ScalarType dt = dtype.value_or(l.is_double ? kDouble : kLong);
  if (dt == kBool) {
    if (l.is_double || (l.i != 0 && l.i != 1))
      fail_at(at, "a Bool tensor constant must be {0} or {1}");
    return IValue(retorch::full({}, Scalar(l.i == 1), dt));
  }
  if (is_integral_type(dt, false) && l.is_double)
    fail_at(at, "the tensor constant {", l.d, "} is not an integer but its type is ",
            dtype_type_name(dt));
  if (l.is_double && dt != kDouble && std::isfinite(l.d) &&
      std::fabs(l.d) > double(std::numeric_limits<float>::max()))
    fail_at(at, "the tensor constant {", l.d, "} is out of range for ", dtype_type_name(dt));
  try {
    return IValue(retorch::full({}, l.is_double ? Scalar(l.d) : Scalar(l.i), dt));
  } catch (const Error& e) {
    fail_at(at, e.what());
  }
}

IValue Parser::natural_value(const Literal& l, size_t at) {
  switch (l.kind) {
    case Literal::kNone:
      return IValue();
    case Literal::kInt:
      return IValue(l.i);
    case Literal::kDouble:
      return IValue(l.d);
    case Literal::kStr:
      return IValue(l.s);
    case Literal::kIntList:
      return IValue(l.ints);
    case Literal::kDoubleList:
      return IValue(l.doubles);
    case Literal::kScalarTensor:
      return scalar_tensor(l, std::nullopt, at);
    case Literal::kTensorRef:
      return IValue(l.tensor);
  }
  return IValue();
}

// A prim::Constant's value takes its kind from the output type: `bool = ...[value=1]` is true,
// `Device = ...[value="cpu"]` a Device, `Double(...) = ...[value={2}]` a double 0-d tensor.
IValue Parser::typed_constant(const Literal& l, const TypePtr& t, size_t at) {
  if (l.kind == Literal::kNone) return IValue();
  switch (t->kind()) {
    case TypeKind::kBool:
      if (l.kind == Literal::kInt && (l.i == 0 || l.i == 1)) return IValue(l.i == 1);
      break;
    case TypeKind::kInt:
    case TypeKind::kScalarType:
      if (l.kind == Literal::kInt) return IValue(l.i);
      break;
    case TypeKind::kFloat:
      if (l.kind == Literal::kDouble) return IValue(l.d);
      if (l.kind == Literal::kInt) return IValue(double(l.i));
      break;
    case TypeKind::kStr:
      if (l.kind == Literal::kStr) return IValue(l.s);
      break;
    case TypeKind::kDevice:
      if (l.kind == Literal::kStr) {
        if (auto d = device_from(l.s)) return IValue(*d);
        fail_at(at, "'", l.s, "' is not a device (expected cpu, cuda or cuda:N)");
      }
      break;
    case TypeKind::kNone:
      break;
    case TypeKind::kTensor:
      if (l.kind == Literal::kScalarTensor) return scalar_tensor(l, t->tensor().dtype, at);
      if (l.kind == Literal::kTensorRef) return IValue(l.tensor);
      break;
    case TypeKind::kList:
      if (t->elem()->kind() == TypeKind::kFloat) {
        if (l.kind == Literal::kDoubleList) return IValue(l.doubles);
        if (l.kind == Literal::kIntList)
          return IValue(std::vector<double>(l.ints.begin(), l.ints.end()));
        break;
      }
      if (t->elem()->kind() == TypeKind::kInt) {
        if (l.kind == Literal::kIntList) return IValue(l.ints);
        break;
      }
      return natural_value(l, at);
    default:
      return natural_value(l, at);
  }
  fail_at(at, "the constant does not fit its type ", t->str());
}

// ---------------------------------------------------------------- types

TypePtr Parser::type(int level) {
  if (level > kMaxTypeDepth) fail("type nested too deeply");
  skip_ws();
  size_t at = pos_;
  TypePtr t;
  int depth = level;  // how deep the result nests, bounded as it grows
  if (accept("(")) {
    std::vector<TypePtr> elems;
    if (!accept(")")) {
      do elems.push_back(type(level + 1));
      while (accept(","));
      expect(")", "closing the tuple type");
    }
    t = Type::tuple_of(std::move(elems));
  } else {
    if (!is_alpha(peek())) fail("expected a type, found ", found());
    while (is_name_char(peek())) ++pos_;
    std::string_view name = s_.substr(at, pos_ - at);
    static const std::pair<std::string_view, TypePtr (*)()> kSimple[] = {
        {"int", Type::int_type},
        {"float", Type::float_type},
        {"bool", Type::bool_type},
        {"str", Type::str_type},
        {"NoneType", Type::none_type},
        {"Device", Type::device_type},
        {"Scalar", Type::number_type},
        {"Any", Type::any},
        {"Generator", Type::generator_type}};
    for (const auto& [n, make] : kSimple)
      if (name == n) t = make();
    if (!t) {
      std::optional<ScalarType> dtype = dtype_from_type_name(name);
      if (dtype || name == "Tensor") {
        t = lookahead("(") ? tensor_type(dtype)
                           : (dtype ? Type::tensor_with(TensorInfo{dtype, {}, {}, {}, {}})
                                    : Type::tensor_type());
      } else if (name.find('.') != std::string_view::npos && name.back() != '.') {
        t = Type::class_type(std::string(name));
      } else {
        fail_at(at, "unknown type '", name, "'");
      }
    }
  }
  for (;;) {
    if (accept("[")) {
      expect("]", "after '[' of a list type");
      t = Type::list_of(t);
    } else if (accept("?")) {
      t = Type::optional_of(t);
    } else {
      break;
    }
    if (++depth > kMaxTypeDepth) fail("type nested too deeply");
  }
  return t;
}

// Float(2, *, strides=[3, 1], requires_grad=0, device=cpu): every part optional.
TypePtr Parser::tensor_type(std::optional<ScalarType> dtype) {
  expect("(", "opening the tensor type");
  size_t start = pos_;
  TensorInfo info;
  info.dtype = dtype;
  std::vector<std::optional<int64_t>> sizes;
  bool keyword_seen = false;
  if (!accept(")")) {
    do {
      skip_ws();
      size_t at = pos_;
      if (peek() == '*' || is_digit(peek())) {
        if (keyword_seen) fail("sizes must come before strides=, requires_grad= and device=");
        if (accept("*"))
          sizes.push_back(std::nullopt);
        else
          sizes.push_back(integer(false));
        continue;
      }
      std::string key = ident("a size, strides=, requires_grad= or device=");
      expect("=", "after ", key);
      keyword_seen = true;
      if (key == "strides") {
        if (info.strides) fail_at(at, "strides given twice");
        info.strides.emplace();
        expect("[", "opening the strides");
        if (!accept("]")) {
          do info.strides->push_back(integer(true));
          while (accept(","));
          expect("]", "closing the strides");
        }
      } else if (key == "requires_grad") {
        if (info.requires_grad) fail_at(at, "requires_grad given twice");
        int64_t v = integer(false);
        if (v != 0 && v != 1) fail_at(at, "requires_grad must be 0 or 1");
        info.requires_grad = v == 1;
      } else if (key == "device") {
        if (info.device) fail_at(at, "device given twice");
        skip_ws();
        size_t d0 = pos_;
        while (is_ident_char(peek()) || peek() == ':') ++pos_;
        auto d = device_from(s_.substr(d0, pos_ - d0));
        if (!d) fail_at(d0, "expected a device (cpu, cuda or cuda:N)");
        info.device = *d;
      } else {
        fail_at(at, "unknown tensor type field '", key,
                "' (expected a size, strides=, requires_grad= or device=)");
      }
    } while (accept(","));
    expect(")", "closing the tensor type");
  }
  if (!sizes.empty())
    info.sizes = std::move(sizes);
  else if (info.strides && info.strides->empty())
    info.sizes.emplace();  // a 0-d tensor
  else if (!info.strides && info.requires_grad && info.device) {
    // PyTorch prints a complete 0-d type without sizes or strides: Long(requires_grad=0, ...).
    info.sizes.emplace();
    info.strides.emplace();
  }
  if (info.sizes && info.strides && info.sizes->size() != info.strides->size())
    fail_at(start, "the tensor type has ", info.sizes->size(), " sizes but ", info.strides->size(),
            " strides");
  return Type::tensor_with(std::move(info));
}

// ---------------------------------------------------------------- values

ValueRef Parser::value_name() {
  skip_ws();
  ValueRef r;
  r.at = pos_;
  if (peek() != '%') fail("expected a value name like %x or %3, found ", found());
  ++pos_;
  size_t start = pos_;
  while (is_name_char(peek())) ++pos_;
  std::string_view name = s_.substr(start, pos_ - start);
  if (name.empty()) fail("expected a value name after '%', found ", found());
  bool digits = true;
  for (char c : name) digits = digits && is_digit(c);
  if (!digits) {
    r.key = std::string(name);
    return r;
  }
  uint64_t v = 0;
  for (char c : name) {
    v = v * 10 + uint64_t(c - '0');
    if (v > kMaxValueNumber) fail_at(r.at, "value number %", name, " is too large");
  }
  r.numbered = true;
  r.number = size_t(v);
  r.key = std::to_string(v);
  return r;
}

Value* Parser::lookup(const ValueRef& r) {
  auto it = env_.find(r.key);
  if (it != env_.end()) return it->second;
  if (out_of_scope_.count(r.key))
    fail_at(r.at, "value %", r.key, " is used outside the block that defines it");
  fail_at(r.at, "value %", r.key, " is used before it is defined");
}

// Names v; `visible` = false leaves it out of scope for now (a node's outputs during its blocks).
void Parser::define(const ValueRef& r, Value* v, bool visible) {
  if (!ever_.insert(r.key).second) fail_at(r.at, "value %", r.key, " is defined twice");
  if (visible) make_visible(r.key, v);
  if (r.numbered)
    numbers_.emplace_back(v, r.number);
  else
    v->set_debug_name(r.key);
}

void Parser::make_visible(const std::string& key, Value* v) {
  env_[key] = v;
  scopes_.back().push_back(key);
}

std::vector<Value*> Parser::value_list(const char* what) {
  expect("(", "opening ", what);
  std::vector<Value*> r;
  if (accept(")")) return r;
  do r.push_back(lookup(value_name()));
  while (accept(","));
  expect(")", "closing ", what);
  return r;
}

// ---------------------------------------------------------------- graph, blocks, nodes

void Parser::block_inputs(Block* b, const char* what) {
  if (!accept(")")) {
    do {
      ValueRef r = value_name();
      expect(":", "after the ", what, " input's name");
      define(r, b->add_input("", type(0)));
    } while (accept(","));
    expect(")", "closing the ", what, "'s inputs");
  }
  expect(":", "after the ", what, "'s inputs");
}

std::unique_ptr<Graph> Parser::graph() {
  auto g = std::make_unique<Graph>();
  g_ = g.get();
  scopes_.emplace_back();
  if (!accept_keyword("graph")) fail("expected 'graph(' at the start, found ", found());
  expect("(", "after 'graph'");
  block_inputs(g->block(), "graph");
  statements(g->block(), 0, true);
  skip_ws();
  if (!at_end()) fail("expected the end of the text after 'return (...)', found ", found());
  // Values come out numbered in creation order; when the text's numbers say otherwise (a pass
  // moved or deleted nodes), give them the printed numbers.
  bool in_order = true;
  for (const auto& [v, u] : numbers_) in_order = in_order && v->unique() == u;
  if (!in_order) g->assign_uniques(numbers_);
  return g;
}

void Parser::statements(Block* b, int depth, bool top) {
  for (;;) {
    skip_ws();
    if (top ? accept_keyword("return") : accept("->")) {
      for (Value* v : value_list(top ? "the graph's outputs" : "the block's outputs"))
        b->register_output(v);
      return;
    }
    if (peek() == '%' || peek() == '=') {
      node(b, depth);
      continue;
    }
    fail("expected a node ('%name : Type = kind(...)') or ",
         top ? "'return (...)'" : "'-> (...)' closing the block", ", found ", found());
  }
}

void Parser::node(Block* b, int depth) {
  std::vector<std::pair<ValueRef, TypePtr>> outs;
  if (peek() == '%') {
    do {
      ValueRef r = value_name();
      expect(":", "after the output's name");
      outs.emplace_back(std::move(r), type(0));
    } while (accept(","));
  }
  expect("=", "before the node's kind");
  skip_ws();
  size_t kind_at = pos_;
  std::string ns = ident("a node kind like aten::add or prim::Constant");
  if (s_.substr(pos_, 2) != "::" || !is_alpha(peek(2)))
    fail_at(kind_at, "expected a node kind like aten::add or prim::Constant");
  pos_ += 2;
  size_t name_at = pos_;
  while (is_name_char(peek())) ++pos_;
  std::string kind = ns + "::" + std::string(s_.substr(name_at, pos_ - name_at));

  std::vector<std::tuple<std::string, Literal, size_t>> attrs;
  if (accept("[")) {
    if (!accept("]")) {
      do {
        skip_ws();
        size_t at = pos_;
        std::string name = ident("an attribute name");
        for (const auto& a : attrs)
          if (std::get<0>(a) == name) fail_at(at, "attribute '", name, "' given twice");
        expect("=", "after the attribute name");
        skip_ws();
        size_t value_at = pos_;
        attrs.emplace_back(std::move(name), literal(), value_at);
      } while (accept(","));
      expect("]", "closing the attributes of ", kind);
    }
  }
  std::vector<Value*> ins = value_list(("the inputs of " + kind).c_str());

  // "# file:line" up to the end of the line is the node's source location.
  std::string loc;
  size_t p = pos_;
  while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\r')) ++p;
  if (p < s_.size() && s_[p] == '#') {
    size_t e = s_.find('\n', p);
    if (e == std::string_view::npos) e = s_.size();
    size_t a = p + 1, z = e;
    while (a < z && is_space(s_[a])) ++a;
    while (z > a && is_space(s_[z - 1])) --z;
    loc = std::string(s_.substr(a, z - a));
    pos_ = e;
  }

  Node* n = nullptr;
  if (kind.rfind("aten::", 0) == 0) {
    std::vector<TypePtr> types;
    for (Value* v : ins) types.push_back(v->type());
    const OperatorHandle* op = nullptr;
    try {
      op = &resolve_overload(kind, types);
    } catch (const Error& e) {
      std::string_view m = e.what();
      if (m.substr(0, 5) == "jit: ") m.remove_prefix(5);
      fail_at(kind_at, m);
    }
    if (outs.size() != size_t(op->schema().num_returns))
      fail_at(kind_at, kind, " returns ", op->schema().num_returns, " values but the node has ",
              outs.size(), " outputs");
    n = g_->create("aten::" + std::string(op->schema().name), ins, 0);
    n->set_op(op);
  } else {
    n = g_->create(kind, ins, 0);
  }
  b->append_node(n);
  // The outputs are created (and numbered) now but come into scope after the node's blocks.
  for (const auto& [r, t] : outs) define(r, n->add_output(t), /*visible=*/false);
  for (const auto& [name, lit, at] : attrs) {
    bool typed = kind == kind::kConstant && name == "value" && outs.size() == 1;
    n->set_attr(name, typed ? typed_constant(lit, outs[0].second, at) : natural_value(lit, at));
  }
  n->set_source_location(std::move(loc));

  for (size_t i = 0;; ++i) {
    skip_ws();
    if (s_.substr(pos_, 5) != "block" || !is_digit(peek(5))) break;
    if (depth + 1 > kMaxBlockDepth) fail("blocks nested too deeply");
    block(n, i, depth + 1);
  }
  for (size_t i = 0; i < outs.size(); ++i) make_visible(outs[i].first.key, n->output(i));
}

// block0(%i : int, %x.1 : Tensor): <nodes> -> (%a, %b)
void Parser::block(Node* n, size_t index, int depth) {
  size_t at = pos_;
  pos_ += 5;
  uint64_t k = 0;
  while (is_digit(peek())) {
    k = std::min<uint64_t>(k * 10 + uint64_t(peek() - '0'), uint64_t(1) << 32);
    ++pos_;
  }
  if (k != index) fail_at(at, "expected block", index, " of ", n->kind());
  Block* b = n->add_block();
  scopes_.emplace_back();
  expect("(", "opening the block's inputs");
  block_inputs(b, "block");
  statements(b, depth, false);
  for (const std::string& key : scopes_.back()) {
    env_.erase(key);
    out_of_scope_.insert(key);
  }
  scopes_.pop_back();
}

}  // namespace

std::unique_ptr<Graph> parse_ir(std::string_view text,
                                const std::vector<Tensor>* tensor_constants) {
  return Parser(text, tensor_constants).graph();
}

TypePtr parse_type(std::string_view text) {
  return Parser(text, nullptr).whole_type();
}

}  // namespace retorch::jit
