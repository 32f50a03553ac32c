// The emitter table of pointwise ops (STYLE 11: emitters are tables from op to code template);
// the rt_* functions they call are defined in the generated source's prelude (CppCodegen.cpp).
#include "retorch/compiler/PointwiseRules.h"

#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <unordered_map>

namespace retorch::compiler {

std::string literal(double v, const std::string& ct) {
  if (ct == "bool") return v != 0 ? "true" : "false";
  if (ct == "int64_t") return "int64_t(" + std::to_string(int64_t(v)) + ")";
  if (std::isnan(v)) return ct + "(NAN)";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + ct + "(INFINITY)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return ct + "(" + s + ")";
}

std::optional<double> number(const Operand& x) {
  if (x.is_tensor || !x.constant.is_scalar()) return std::nullopt;
  return x.constant.to_double();
}

std::string_view overload_key(const char* name, const char* overload) {
  static std::mutex mu;  // the rule and derivative tables may be built on two threads at once
  static std::set<std::string> keys;
  std::lock_guard<std::mutex> lock(mu);
  return *keys.emplace(std::string(name) + "." + overload).first;
}

std::string as_ctype(const Operand& x, const std::string& ct) {
  if (!x.is_tensor) {
    const IValue& c = x.constant;
    if (c.is_bool()) return literal(c.to_bool() ? 1 : 0, ct);
    if (c.is_int()) return literal(double(c.to_int()), ct);
    return literal(c.to_double(), ct);
  }
  if (x.ctype == ct) return x.expr;
  return "static_cast<" + ct + ">(" + x.expr + ")";
}

namespace {

using Args = std::vector<Operand>;
using Out = std::optional<std::string>;

PointwiseRule unary_float(std::string fn) {
  return {[fn](const Args& a, const std::string& ct) -> Out {
            return fn + "(" + as_ctype(a[0], ct) + ")";
          },
          true};
}

PointwiseRule unary(std::string fn) {
  PointwiseRule r = unary_float(fn);
  r.floating = false;
  return r;
}

// add/sub with alpha: a + alpha * b.
PointwiseRule add_like(const char* sign) {
  return {[sign](const Args& a, const std::string& ct) -> Out {
    std::string b = as_ctype(a[1], ct);
    if (a.size() > 2) {
      auto alpha = number(a[2]);
      if (!alpha) return std::nullopt;
      if (*alpha != 1) b = literal(*alpha, ct) + " * " + b;
    }
    return "(" + as_ctype(a[0], ct) + " " + sign + " " + b + ")";
  }};
}

PointwiseRule binary_infix(const char* opr, bool floating = false) {
  return {[opr](const Args& a, const std::string& ct) -> Out {
            return "(" + as_ctype(a[0], ct) + " " + opr + " " + as_ctype(a[1], ct) + ")";
          },
          floating};
}

PointwiseRule binary_fn(const char* fn, bool floating = false) {
  return {[fn](const Args& a, const std::string& ct) -> Out {
            return std::string(fn) + "(" + as_ctype(a[0], ct) + ", " + as_ctype(a[1], ct) + ")";
          },
          floating};
}

PointwiseRule comparison(const char* opr) {
  PointwiseRule r = binary_infix(opr);
  r.comparison = true;
  return r;
}

// clamp(x, min?, max?) with constant bounds; NaN stays NaN (rt_clamp).
Out clamp_expr(const Operand& x, const Operand* lo, const Operand* hi, const std::string& ct) {
  std::string e = as_ctype(x, ct);
  if (lo && !(lo->constant.is_none())) {
    if (!number(*lo)) return std::nullopt;
    e = "rt_max_nan(" + e + ", " + literal(*number(*lo), ct) + ")";
  }
  if (hi && !(hi->constant.is_none())) {
    if (!number(*hi)) return std::nullopt;
    e = "rt_min_nan(" + e + ", " + literal(*number(*hi), ct) + ")";
  }
  return e;
}

const std::unordered_map<std::string_view, PointwiseRule>& rules() {
  static const std::unordered_map<std::string_view, PointwiseRule> kRules = [] {
    std::unordered_map<std::string_view, PointwiseRule> m;
    for (const char* f : {"exp", "log", "tanh", "sigmoid", "erf", "sin", "cos", "log1p", "expm1",
                          "sqrt", "rsqrt", "floor", "ceil", "trunc", "silu", "exp2", "log2",
                          "log10", "erfc", "tan", "atan", "sinh", "cosh", "asin", "acos"}) {
      m.emplace(f, unary_float(std::string("rt_") + f));
    }
    m.emplace("round", unary_float("rt_round"));
    m.emplace("reciprocal", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                            return "(" + literal(1, ct) + " / " + as_ctype(a[0], ct) + ")";
                                          },
                                          true});
    m.emplace("neg", unary("-"));
    m.emplace("abs", unary("rt_abs"));
    m.emplace("relu", unary("rt_relu"));
    m.emplace("sign", unary("rt_sign"));
    m.emplace("gelu", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                      std::string approx = "none";
                                      if (a.size() > 1) {
                                        if (!a[1].constant.is_string()) return std::nullopt;
                                        approx = a[1].constant.to_string();
                                      }
                                      if (approx == "none") return "rt_gelu(" + as_ctype(a[0], ct) + ")";
                                      if (approx == "tanh") return "rt_gelu_tanh(" + as_ctype(a[0], ct) + ")";
                                      return std::nullopt;
                                    },
                                    true});
    // Tensor and Scalar overloads share a rule: a scalar is a constant operand (a literal).
    for (const char* overload : {"Tensor", "Scalar"}) {
      auto key = [&](const char* name) { return overload_key(name, overload); };
      m.emplace(key("add"), add_like("+"));
      m.emplace(key("sub"), add_like("-"));
      m.emplace(key("mul"), binary_infix("*"));
      m.emplace(key("div"), binary_infix("/", true));
      for (auto [name, opr] : {std::pair{"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="},
                               {"gt", ">"}, {"ge", ">="}})
        m.emplace(key(name), comparison(opr));
    }
    m.emplace("maximum", binary_fn("rt_max_nan"));
    m.emplace("minimum", binary_fn("rt_min_nan"));
    m.emplace("max.other", binary_fn("rt_max_nan"));
    m.emplace("min.other", binary_fn("rt_min_nan"));
    m.emplace("atan2", binary_fn("rt_atan2", true));
    m.emplace("pow.Tensor_Scalar", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                                   auto e = number(a[1]);
                                                   if (!e) return std::nullopt;
                                                   std::string x = as_ctype(a[0], ct);
                                                   if (*e == 1) return x;
                                                   if (*e == 2) return "(" + x + " * " + x + ")";
                                                   if (*e == 3) return "(" + x + " * " + x + " * " + x + ")";
                                                   if (*e == 0.5) return "rt_sqrt(" + x + ")";
                                                   return "rt_pow(" + x + ", " + literal(*e, ct) + ")";
                                                 },
                                                 true});
    m.emplace("where.self", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                            return "(" + as_ctype(a[0], "bool") + " ? " + as_ctype(a[1], ct) +
                                                   " : " + as_ctype(a[2], ct) + ")";
                                          }});
    m.emplace("masked_fill.Scalar", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                                    auto v = number(a[2]);
                                                    if (!v) return std::nullopt;
                                                    return "(" + as_ctype(a[1], "bool") + " ? " + literal(*v, ct) +
                                                           " : " + as_ctype(a[0], ct) + ")";
                                                  }});
    m.emplace("clamp", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                       return clamp_expr(a[0], a.size() > 1 ? &a[1] : nullptr,
                                                         a.size() > 2 ? &a[2] : nullptr, ct);
                                     }});
    m.emplace("clamp_min", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                           return clamp_expr(a[0], &a[1], nullptr, ct);
                                         }});
    m.emplace("clamp_max", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                           return clamp_expr(a[0], nullptr, &a[1], ct);
                                         }});
    m.emplace("hardtanh", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                          Operand lo{false, "", "", kFloat, IValue(-1.0)};
                                          Operand hi{false, "", "", kFloat, IValue(1.0)};
                                          return clamp_expr(a[0], a.size() > 1 ? &a[1] : &lo,
                                                            a.size() > 2 ? &a[2] : &hi, ct);
                                        },
                                        true});
    m.emplace("leaky_relu", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                            double s = 0.01;
                                            if (a.size() > 1) {
                                              if (!number(a[1])) return std::nullopt;
                                              s = *number(a[1]);
                                            }
                                            std::string x = as_ctype(a[0], ct);
                                            return "(" + x + " > " + literal(0, ct) + " ? " + x + " : " + x +
                                                   " * " + literal(s, ct) + ")";
                                          },
                                          true});
    m.emplace("threshold", PointwiseRule{[](const Args& a, const std::string& ct) -> Out {
                                           auto th = number(a[1]), v = number(a[2]);
                                           if (!th || !v) return std::nullopt;
                                           std::string x = as_ctype(a[0], ct);
                                           return "(" + x + " <= " + literal(*th, ct) + " ? " + literal(*v, ct) +
                                                  " : " + x + ")";
                                         }});
    return m;
  }();
  return kRules;
}

}  // namespace

const PointwiseRule* find_pointwise_rule(std::string_view op_key) {
  auto it = rules().find(op_key);
  return it == rules().end() ? nullptr : &it->second;
}

}  // namespace retorch::compiler
