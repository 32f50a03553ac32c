// Primitive number/bool operations for scripted graphs: arithmetic, comparisons, conversions.
#include "retorch/jit/PrimOps.h"

#include <cmath>
#include <utility>

namespace retorch::jit {

namespace {

IValue pop(Stack& s) {
  IValue v = std::move(s.back());
  s.pop_back();
  return v;
}

bool is_number(const IValue& v) {
  return v.is_int() || v.is_double() || v.is_bool();
}

double as_double(const IValue& v) {
  return v.is_double() ? v.to_double() : double(v.to_int());
}

// Python semantics: int op int stays int (except /), anything with a float is float.
template <typename IntOp, typename FloatOp>
void arith(Stack& s, const char* name, IntOp iop, FloatOp fop) {
  IValue b = pop(s), a = pop(s);
  RT_CHECK(is_number(a) && is_number(b), "jit: prim::", name, " expects numbers, got ",
           a.type_name(), " and ", b.type_name());
  if (!a.is_double() && !b.is_double())
    s.emplace_back(iop(a.to_int(), b.to_int()));
  else
    s.emplace_back(fop(as_double(a), as_double(b)));
}

template <typename Cmp>
void compare(Stack& s, const char* name, Cmp cmp) {
  IValue b = pop(s), a = pop(s);
  RT_CHECK(is_number(a) && is_number(b), "jit: prim::", name, " expects numbers, got ",
           a.type_name(), " and ", b.type_name());
  if (!a.is_double() && !b.is_double())
    s.emplace_back(bool(cmp(a.to_int(), b.to_int())));
  else
    s.emplace_back(bool(cmp(as_double(a), as_double(b))));
}

int64_t checked_divisor(int64_t b, const char* name) {
  RT_CHECK(b != 0, "jit: prim::", name, ": integer division or modulo by zero");
  return b;
}

// Python's floor division and modulo (the result takes the divisor's sign).
int64_t floordiv(int64_t a, int64_t b) {
  b = checked_divisor(b, "floor_divide");
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t pymod(int64_t a, int64_t b) {
  b = checked_divisor(b, "remainder");
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

void add(Stack& s) {
  arith(
      s, "add", [](int64_t a, int64_t b) { return a + b; },
      [](double a, double b) { return a + b; });
}
void sub(Stack& s) {
  arith(
      s, "sub", [](int64_t a, int64_t b) { return a - b; },
      [](double a, double b) { return a - b; });
}
void mul(Stack& s) {
  arith(
      s, "mul", [](int64_t a, int64_t b) { return a * b; },
      [](double a, double b) { return a * b; });
}
void div(Stack& s) {
  IValue b = pop(s), a = pop(s);
  RT_CHECK(is_number(a) && is_number(b), "jit: prim::div expects numbers");
  RT_CHECK(as_double(b) != 0, "jit: prim::div: division by zero");
  s.emplace_back(as_double(a) / as_double(b));
}
void floor_divide(Stack& s) {
  arith(s, "floor_divide", floordiv, [](double a, double b) { return std::floor(a / b); });
}
void remainder(Stack& s) {
  arith(s, "remainder", pymod, [](double a, double b) { return a - std::floor(a / b) * b; });
}
void pow(Stack& s) {
  IValue b = pop(s), a = pop(s);
  RT_CHECK(is_number(a) && is_number(b), "jit: prim::pow expects numbers");
  if (!a.is_double() && !b.is_double() && b.to_int() >= 0) {
    int64_t r = 1, base = a.to_int();
    for (int64_t e = b.to_int(); e > 0; --e) r *= base;
    s.emplace_back(r);
  } else {
    s.emplace_back(std::pow(as_double(a), as_double(b)));
  }
}
void lt(Stack& s) {
  compare(s, "lt", [](auto a, auto b) { return a < b; });
}
void le(Stack& s) {
  compare(s, "le", [](auto a, auto b) { return a <= b; });
}
void gt(Stack& s) {
  compare(s, "gt", [](auto a, auto b) { return a > b; });
}
void ge(Stack& s) {
  compare(s, "ge", [](auto a, auto b) { return a >= b; });
}
void eq(Stack& s) {
  compare(s, "eq", [](auto a, auto b) { return a == b; });
}
void ne(Stack& s) {
  compare(s, "ne", [](auto a, auto b) { return a != b; });
}

// A tensor or number as a Scalar (a tensor must hold one element).
Scalar to_scalar(const IValue& v, const char* name) {
  if (v.is_tensor()) {
    const Tensor& t = v.to_tensor();
    RT_CHECK(t.numel() == 1, "jit: ", name, ": a Tensor with ", t.numel(),
             " elements cannot be converted to a scalar");
    return t.item();
  }
  RT_CHECK(is_number(v), "jit: ", name, " expects a number or tensor, got ", v.type_name());
  return v.to_scalar();
}

void to_bool(Stack& s) {
  s.emplace_back(to_scalar(pop(s), "prim::Bool").to_bool());
}
void to_int(Stack& s) {
  s.emplace_back(int64_t(to_scalar(pop(s), "prim::Int").to_double()));
}
void to_float(Stack& s) {
  s.emplace_back(to_scalar(pop(s), "prim::Float").to_double());
}
void num_to_tensor(Stack& s) {
  IValue v = pop(s);
  RT_CHECK(is_number(v), "jit: prim::NumToTensor expects a number, got ", v.type_name());
  s.emplace_back(scalar_to_tensor(v.to_scalar()));
}

struct Entry {
  std::string_view kind;
  PrimFn fn;
};
constexpr Entry kPrimOps[] = {
    {"prim::add", add},
    {"prim::sub", sub},
    {"prim::mul", mul},
    {"prim::div", div},
    {"prim::floor_divide", floor_divide},
    {"prim::remainder", remainder},
    {"prim::pow", pow},
    {"prim::lt", lt},
    {"prim::le", le},
    {"prim::gt", gt},
    {"prim::ge", ge},
    {"prim::eq", eq},
    {"prim::ne", ne},
    {"prim::Bool", to_bool},
    {"prim::Int", to_int},
    {"prim::Float", to_float},
    {"prim::NumToTensor", num_to_tensor},
};

}  // namespace

PrimFn find_prim_op(std::string_view kind) {
  for (const Entry& e : kPrimOps)
    if (e.kind == kind) return e.fn;
  return nullptr;
}

}  // namespace retorch::jit
