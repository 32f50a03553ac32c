// The derivative table of pointwise ops: for each op with a compiled backward, the local
// derivative of its result with respect to each argument, as C++ expressions (the same formulas
// as the ops' entries in ops.yaml; rt_*_grad helpers are in the prelude, CppPrelude.cpp).
#include <cmath>
#include <unordered_map>

#include "retorch/compiler/PointwiseRules.h"

namespace retorch::compiler {

namespace {

using Args = std::vector<Operand>;
using Partials = std::optional<std::vector<std::string>>;

// f(x) -> one partial built from x's expression, the result's name and the compute type.
GradFn unary(std::function<std::string(const std::string& x, const std::string& y,
                                       const std::string& ct)> f) {
  return [f](const Args& a, const std::string& y, const std::string& ct) -> Partials {
    return std::vector<std::string>{f(as_ctype(a[0], ct), y, ct)};
  };
}

// A 0/1 mask as a value of type ct.
std::string mask(const std::string& cond, const std::string& ct, bool where = true) {
  return "(" + cond + " ? " + literal(where ? 1 : 0, ct) + " : " + literal(where ? 0 : 1, ct) + ")";
}

// clamp's derivative: 1 inside [lo, hi] (inclusive, or exclusive for hardtanh), 0 outside and
// at NaN; bounds are constants or None.
Partials clamp_grad(const Args& a, const Operand* lo, const Operand* hi, const std::string& ct,
                    bool strict = false) {
  std::string x = as_ctype(a[0], ct), cond = "true";
  if (lo && !lo->constant.is_none()) {
    if (!number(*lo)) return std::nullopt;
    cond = x + (strict ? " > " : " >= ") + literal(*number(*lo), ct);
  }
  if (hi && !hi->constant.is_none()) {
    if (!number(*hi)) return std::nullopt;
    cond += " && " + x + (strict ? " < " : " <= ") + literal(*number(*hi), ct);
  }
  std::vector<std::string> p(a.size());
  p[0] = mask(cond, ct);
  return p;
}

const std::unordered_map<std::string_view, GradFn>& grads() {
  static const std::unordered_map<std::string_view, GradFn> kGrads = [] {
    std::unordered_map<std::string_view, GradFn> m;
    auto lit = [](double v, const std::string& ct) { return literal(v, ct); };
    m.emplace("neg", unary([=](auto&, auto&, auto& ct) { return lit(-1, ct); }));
    m.emplace("exp", unary([](auto&, auto& y, auto&) { return y; }));
    m.emplace("log", unary([=](auto& x, auto&, auto& ct) { return "(" + lit(1, ct) + " / " + x + ")"; }));
    m.emplace("tanh", unary([=](auto&, auto& y, auto& ct) { return "(" + lit(1, ct) + " - " + y + " * " + y + ")"; }));
    m.emplace("sigmoid", unary([=](auto&, auto& y, auto& ct) { return "(" + y + " * (" + lit(1, ct) + " - " + y + "))"; }));
    m.emplace("relu", unary([](auto& x, auto&, auto& ct) { return mask(x + " > " + literal(0, ct), ct); }));
    m.emplace("silu", unary([](auto& x, auto&, auto&) { return "rt_silu_grad(" + x + ")"; }));
    m.emplace("sqrt", unary([=](auto&, auto& y, auto& ct) { return "(" + lit(0.5, ct) + " / " + y + ")"; }));
    m.emplace("rsqrt", unary([=](auto&, auto& y, auto& ct) { return "(" + lit(-0.5, ct) + " * " + y + " * " + y + " * " + y + ")"; }));
    m.emplace("reciprocal", unary([](auto&, auto& y, auto&) { return "(-" + y + " * " + y + ")"; }));
    m.emplace("sin", unary([](auto& x, auto&, auto&) { return "rt_cos(" + x + ")"; }));
    m.emplace("cos", unary([](auto& x, auto&, auto&) { return "(-rt_sin(" + x + "))"; }));
    m.emplace("abs", unary([](auto& x, auto&, auto&) { return "rt_sign(" + x + ")"; }));
    m.emplace("log1p", unary([=](auto& x, auto&, auto& ct) { return "(" + lit(1, ct) + " / (" + lit(1, ct) + " + " + x + "))"; }));
    m.emplace("expm1", unary([=](auto&, auto& y, auto& ct) { return "(" + y + " + " + lit(1, ct) + ")"; }));
    m.emplace("erf", unary([=](auto& x, auto&, auto& ct) {
      return "(" + lit(1.1283791670955126, ct) + " * rt_exp(-" + x + " * " + x + "))";
    }));
    for (const char* f : {"floor", "ceil", "trunc", "round", "sign"})
      m.emplace(f, unary([=](auto&, auto&, auto& ct) { return lit(0, ct); }));
    m.emplace("gelu", [](const Args& a, const std::string&, const std::string& ct) -> Partials {
      std::string approx = a.size() > 1 && a[1].constant.is_string() ? a[1].constant.to_string() : "none";
      if (approx != "none" && approx != "tanh") return std::nullopt;
      std::vector<std::string> p(a.size());
      p[0] = (approx == "none" ? "rt_gelu_grad(" : "rt_gelu_tanh_grad(") + as_ctype(a[0], ct) + ")";
      return p;
    });
    // Tensor and Scalar overloads share a rule (a constant operand takes no gradient).
    for (const char* overload : {"Tensor", "Scalar"}) {
      auto key = [&](const char* name) { return overload_key(name, overload); };
      for (double sign : {1.0, -1.0})
        m.emplace(key(sign > 0 ? "add" : "sub"),
                  [sign](const Args& a, const std::string&, const std::string& ct) -> Partials {
                    double alpha = 1;
                    if (a.size() > 2) {
                      if (!number(a[2])) return std::nullopt;
                      alpha = *number(a[2]);
                    }
                    std::vector<std::string> p(a.size());
                    p[0] = literal(1, ct);
                    p[1] = literal(sign * alpha, ct);
                    return p;
                  });
      m.emplace(key("mul"), [](const Args& a, const std::string&, const std::string& ct) -> Partials {
        return std::vector<std::string>{as_ctype(a[1], ct), as_ctype(a[0], ct)};
      });
      m.emplace(key("div"), [](const Args& a, const std::string& y, const std::string& ct) -> Partials {
        std::string b = as_ctype(a[1], ct);
        return std::vector<std::string>{"(" + literal(1, ct) + " / " + b + ")",
                                        "(-" + y + " / " + b + ")"};
      });
    }
    m.emplace("pow.Tensor_Scalar", [](const Args& a, const std::string& y, const std::string& ct) -> Partials {
      auto e = number(a[1]);
      if (!e) return std::nullopt;
      std::string x = as_ctype(a[0], ct);
      std::vector<std::string> p(2);
      if (*e == 0) p[0] = literal(0, ct);
      else if (*e == 1) p[0] = literal(1, ct);
      else if (*e == 2) p[0] = "(" + literal(2, ct) + " * " + x + ")";
      else if (*e == 0.5) p[0] = "(" + literal(0.5, ct) + " / " + y + ")";
      else p[0] = "(" + literal(*e, ct) + " * rt_pow(" + x + ", " + literal(*e - 1, ct) + "))";
      return p;
    });
    m.emplace("where.self", [](const Args& a, const std::string&, const std::string& ct) -> Partials {
      std::string c = as_ctype(a[0], "bool");
      return std::vector<std::string>{"", mask(c, ct), mask(c, ct, false)};
    });
    m.emplace("masked_fill.Scalar", [](const Args& a, const std::string&, const std::string& ct) -> Partials {
      return std::vector<std::string>{mask(as_ctype(a[1], "bool"), ct, false), "", ""};
    });
    m.emplace("clamp", [](const Args& a, const std::string&, const std::string& ct) {
      return clamp_grad(a, a.size() > 1 ? &a[1] : nullptr, a.size() > 2 ? &a[2] : nullptr, ct);
    });
    m.emplace("clamp_min", [](const Args& a, const std::string&, const std::string& ct) {
      return clamp_grad(a, &a[1], nullptr, ct);
    });
    m.emplace("clamp_max", [](const Args& a, const std::string&, const std::string& ct) {
      return clamp_grad(a, nullptr, &a[1], ct);
    });
    m.emplace("hardtanh", [](const Args& a, const std::string&, const std::string& ct) {
      Operand lo{false, "", "", kFloat, IValue(-1.0)}, hi{false, "", "", kFloat, IValue(1.0)};
      return clamp_grad(a, a.size() > 1 ? &a[1] : &lo, a.size() > 2 ? &a[2] : &hi, ct, true);
    });
    m.emplace("leaky_relu", [](const Args& a, const std::string&, const std::string& ct) -> Partials {
      double s = 0.01;
      if (a.size() > 1) {
        if (!number(a[1])) return std::nullopt;
        s = *number(a[1]);
      }
      std::vector<std::string> p(a.size());
      p[0] = "(" + as_ctype(a[0], ct) + " > " + literal(0, ct) + " ? " + literal(1, ct) + " : " +
             literal(s, ct) + ")";
      return p;
    });
    m.emplace("threshold", [](const Args& a, const std::string&, const std::string& ct) -> Partials {
      auto th = number(a[1]);
      if (!th) return std::nullopt;
      return std::vector<std::string>{mask(as_ctype(a[0], ct) + " <= " + literal(*th, ct), ct, false),
                                      "", ""};
    });
    return m;
  }();
  return kGrads;
}

}  // namespace

const GradFn* find_pointwise_grad(std::string_view op_key) {
  auto it = grads().find(op_key);
  return it == grads().end() ? nullptr : &it->second;
}

}  // namespace retorch::compiler
