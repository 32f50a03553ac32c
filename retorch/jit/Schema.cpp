// Parses operator schema strings and resolves overloads by argument types.
#include "retorch/jit/Schema.h"

#include <cctype>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace retorch::jit {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on commas outside brackets and parentheses.
std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '(' || c == '[')
      ++depth;
    else if (c == ')' || c == ']')
      --depth;
    else if (c == ',' && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (!trim(s.substr(start)).empty()) parts.push_back(trim(s.substr(start)));
  return parts;
}

// A schema type: "Tensor(a!)", "int[2]", "Tensor?[]", "ScalarType?", ...
TypePtr parse_type(std::string_view t, bool* mutated, std::string_view schema) {
  if (t.size() > 1 && t.back() == '?')
    return Type::optional_of(parse_type(t.substr(0, t.size() - 1), mutated, schema));
  if (t.back() == ']') {
    size_t open = t.rfind('[');
    RT_CHECK(open != std::string_view::npos, "jit: bad type '", t, "' in schema ", schema);
    return Type::list_of(parse_type(t.substr(0, open), mutated, schema));
  }
  if (t.substr(0, 6) == "Tensor") {
    if (t.find('!') != std::string_view::npos && mutated) *mutated = true;
    return Type::tensor_type();
  }
  if (t == "int" || t == "SymInt") return Type::int_type();
  if (t == "float") return Type::float_type();
  if (t == "bool") return Type::bool_type();
  if (t == "str") return Type::str_type();
  if (t == "Scalar") return Type::number_type();
  if (t == "ScalarType" || t == "Layout" || t == "MemoryFormat") return Type::scalar_type_type();
  if (t == "Device") return Type::device_type();
  if (t == "Generator") return Type::generator_type();
  RT_ERROR("jit: unknown type '", t, "' in schema ", schema);
}

// "Tensor self=None" -> name, type, default.
SchemaArg parse_arg(std::string_view a, bool kwarg_only, std::string_view schema) {
  SchemaArg arg;
  arg.kwarg_only = kwarg_only;
  size_t eq = a.find('=');
  if (eq != std::string_view::npos) {
    arg.default_value = std::string(trim(a.substr(eq + 1)));
    a = trim(a.substr(0, eq));
  }
  size_t sp = a.rfind(' ');
  std::string_view type = a;
  if (sp != std::string_view::npos) {
    type = trim(a.substr(0, sp));
    arg.name = std::string(a.substr(sp + 1));
  }
  arg.type = parse_type(type, &arg.mutated, schema);
  return arg;
}

std::vector<int64_t> parse_int_list(std::string_view s) {
  std::vector<int64_t> r;
  for (auto p : split_top(s.substr(1, s.size() - 2)))
    r.push_back(std::strtoll(std::string(p).c_str(), nullptr, 10));
  return r;
}

}  // namespace

FunctionSchema parse_schema(std::string_view schema) {
  FunctionSchema fs;
  size_t open = schema.find('(');
  size_t arrow = schema.rfind("->");
  RT_CHECK(open != std::string_view::npos && arrow != std::string_view::npos && arrow > open,
           "jit: malformed schema '", schema, "'");
  size_t close = schema.rfind(')', arrow);
  std::string_view name = trim(schema.substr(0, open));
  size_t dot = name.find('.');
  fs.name = std::string(name.substr(0, dot));
  if (dot != std::string_view::npos) fs.overload = std::string(name.substr(dot + 1));
  bool kwarg_only = false;
  for (auto a : split_top(schema.substr(open + 1, close - open - 1))) {
    if (a == "*") {
      kwarg_only = true;
      continue;
    }
    fs.args.push_back(parse_arg(a, kwarg_only, schema));
  }
  std::string_view ret = trim(schema.substr(arrow + 2));
  if (!ret.empty() && ret.front() == '(') ret = ret.substr(1, ret.size() - 2);
  for (auto r : split_top(ret)) fs.returns.push_back(parse_arg(r, false, schema));
  return fs;
}

const FunctionSchema& schema_of(const OperatorHandle& op) {
  static std::mutex mu;
  static std::unordered_map<const OperatorHandle*, FunctionSchema> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(&op);
  if (it == cache.end()) it = cache.emplace(&op, parse_schema(op.schema().schema)).first;
  return it->second;
}

IValue default_value(const SchemaArg& arg) {
  RT_CHECK(arg.default_value.has_value(), "jit: argument '", arg.name, "' has no default");
  const std::string& d = *arg.default_value;
  if (d == "None") return IValue();
  TypePtr t = arg.type->kind() == TypeKind::kOptional ? arg.type->elem() : arg.type;
  switch (t->kind()) {
    case TypeKind::kBool:
      return IValue(d == "True");
    case TypeKind::kInt:
    case TypeKind::kScalarType:
      return IValue(int64_t(std::strtoll(d.c_str(), nullptr, 10)));
    case TypeKind::kFloat:
      return IValue(std::strtod(d.c_str(), nullptr));
    case TypeKind::kNumber:
      if (d == "True" || d == "False") return IValue(d == "True");
      if (d.find_first_of(".e") != std::string::npos)
        return IValue(std::strtod(d.c_str(), nullptr));
      return IValue(int64_t(std::strtoll(d.c_str(), nullptr, 10)));
    case TypeKind::kStr: {
      std::string s = d;
      if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'')) s = s.substr(1, s.size() - 2);
      return IValue(s);
    }
    case TypeKind::kList:
      if (t->elem()->kind() == TypeKind::kInt) {
        if (d.front() == '[') return IValue(parse_int_list(d));
        return IValue(std::vector<int64_t>{std::strtoll(d.c_str(), nullptr, 10)});
      }
      break;
    default:
      break;
  }
  RT_ERROR("jit: cannot read default '", d, "' of argument '", arg.name, "'");
}

const OperatorHandle& resolve_overload(std::string_view qualified_name,
                                       const std::vector<TypePtr>& input_types) {
  std::string_view name = qualified_name;
  if (name.substr(0, 6) == "aten::") name.remove_prefix(6);
  auto& d = Dispatcher::singleton();
  if (name.find('.') != std::string_view::npos) {
    OperatorHandle* h = d.find(name);
    RT_CHECK(h != nullptr, "jit: unknown operator ", qualified_name);
    return *h;
  }
  auto matches = [&](const FunctionSchema& s, bool exact_count) {
    if (s.args.size() < input_types.size()) return false;
    if (exact_count && s.args.size() != input_types.size()) return false;
    // Trailing arguments with defaults may be left out (the interpreter fills them in).
    for (size_t i = input_types.size(); i < s.args.size(); ++i)
      if (!s.args[i].default_value) return false;
    for (size_t i = 0; i < input_types.size(); ++i)
      if (input_types[i]->kind() != TypeKind::kAny &&
          !input_types[i]->is_subtype_of(*s.args[i].type))
        return false;
    return true;
  };
  bool known = false;
  for (bool exact_count : {true, false}) {
    for (OperatorHandle* h : d.ops()) {
      if (h->schema().name != name) continue;
      known = true;
      if (matches(schema_of(*h), exact_count)) return *h;
    }
  }
  RT_CHECK(known, "jit: unknown operator ", qualified_name);
  std::string types;
  for (size_t i = 0; i < input_types.size(); ++i) types += (i ? ", " : "") + input_types[i]->str();
  RT_ERROR("jit: no overload of ", qualified_name, " takes arguments (", types, ")");
}

}  // namespace retorch::jit
