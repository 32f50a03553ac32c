// Prints graphs in PyTorch's text form (`%3 : Float(2, 3, ...) = aten::add(%x, %y, %2)`).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "retorch/jit/IR.h"

namespace retorch::jit {

namespace {

// The shortest decimal that reads back as d, with PyTorch's trailing "." for whole numbers.
std::string float_str(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".";
  return s;
}

std::string quoted(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        r += "\\\"";
        break;
      case '\\':
        r += "\\\\";
        break;
      case '\n':
        r += "\\n";
        break;
      case '\t':
        r += "\\t";
        break;
      default:
        r += c;
    }
  }
  return r + "\"";
}

template <typename T, typename F>
std::string list_str(const std::vector<T>& l, const F& f) {
  std::string s = "[";
  for (size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + f(l[i]);
  return s + "]";
}

void print_value_list(std::ostream& os, const std::vector<Value*>& vs) {
  for (size_t i = 0; i < vs.size(); ++i) os << (i ? ", " : "") << "%" << vs[i]->name();
}

void print_block(std::ostream& os, const Block& b, int indent, bool locations);

void print_node(std::ostream& os, const Node& n, int indent, bool locations) {
  const std::string pad(size_t(indent), ' ');
  os << pad;
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    const Value* o = n.outputs()[i];
    os << (i ? ", " : "") << "%" << o->name() << " : " << o->type()->str();
  }
  os << " = " << n.kind();
  if (!n.attrs().empty()) {
    os << "[";
    for (size_t i = 0; i < n.attrs().size(); ++i)
      os << (i ? ", " : "") << n.attrs()[i].first << "=" << constant_str(n.attrs()[i].second);
    os << "]";
  }
  os << "(";
  print_value_list(os, n.inputs());
  os << ")";
  if (locations && !n.source_location().empty()) os << " # " << n.source_location();
  os << "\n";
  for (size_t bi = 0; bi < n.blocks().size(); ++bi) {
    const Block& b = *n.blocks()[bi];
    os << pad << "  block" << bi << "(";
    for (size_t i = 0; i < b.inputs().size(); ++i) {
      const Value* v = b.inputs()[i];
      os << (i ? ", " : "") << "%" << v->name() << " : " << v->type()->str();
    }
    os << "):\n";
    print_block(os, b, indent + 4, locations);
    os << pad << "    -> (";
    print_value_list(os, b.outputs());
    os << ")\n";
  }
}

void print_block(std::ostream& os, const Block& b, int indent, bool locations) {
  for (const Node* n : b.nodes()) print_node(os, *n, indent, locations);
}

}  // namespace

std::string constant_str(const IValue& v) {
  const auto& p = v.payload();
  if (v.is_none()) return "None";
  if (v.is_bool()) return v.to_bool() ? "1" : "0";
  if (v.is_int()) return std::to_string(v.to_int());
  if (v.is_double()) return float_str(v.to_double());
  if (v.is_string()) return quoted(v.to_string());
  if (v.is_int_list())
    return list_str(v.to_int_list(), [](int64_t i) { return std::to_string(i); });
  if (auto* d = std::get_if<std::vector<double>>(&p)) return list_str(*d, float_str);
  if (auto* d = std::get_if<Device>(&p)) return quoted(d->str());
  if (auto* t = std::get_if<ScalarType>(&p)) return std::to_string(int(*t));
  if (v.is_tensor()) {
    const Tensor& t = v.to_tensor();
    if (t.defined() && t.dim() == 0) {
      Scalar s = t.item();
      return "{" +
             (s.is_floating_point() ? float_str(s.to_double())
              : s.is_boolean()      ? std::string(s.to_bool() ? "1" : "0")
                                    : std::to_string(s.to_long())) +
             "}";
    }
    return "<Tensor>";
  }
  return "<" + v.type_name() + ">";
}

std::string Graph::str(bool print_source_locations) const {
  std::ostringstream os;
  os << "graph(";
  const auto& ins = inputs();
  for (size_t i = 0; i < ins.size(); ++i)
    os << (i ? ",\n      " : "") << "%" << ins[i]->name() << " : " << ins[i]->type()->str();
  os << "):\n";
  print_block(os, *block_, 2, print_source_locations);
  os << "  return (";
  print_value_list(os, outputs());
  os << ")\n";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Graph& g) {
  return os << g.str();
}

std::ostream& operator<<(std::ostream& os, const Node& n) {
  print_node(os, n, 0, true);
  return os;
}

}  // namespace retorch::jit
