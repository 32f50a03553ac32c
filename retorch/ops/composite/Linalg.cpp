// Linear-algebra composites: batched products, einsum, tensordot, kron, cross, trace, distances,
// vector/matrix norms, and the torch-facing wrappers of the LAPACK primitives.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"
#include "retorch/ops/composite/LinalgHelpers.h"

namespace retorch::composite {

using linalg_detail::mT;

namespace {

/// Half and bfloat16 products are computed in float and rounded once, like PyTorch.
bool is_half_like(ScalarType t) {
  return t == kHalf || t == kBFloat16;
}

std::vector<int64_t> vec(IntArrayRef a) {
  return std::vector<int64_t>(a.begin(), a.end());
}

void check_batch_operands(const char* op, const Tensor& b1, const Tensor& b2) {
  RT_CHECK(b1.dim() == 3, op, ": batch1 must be a 3D tensor (got shape ", b1.sizes(), ")");
  RT_CHECK(b2.dim() == 3, op, ": batch2 must be a 3D tensor (got shape ", b2.sizes(), ")");
  RT_CHECK(b1.size(0) == b2.size(0), op,
           ": batch1 and batch2 must have same number of batches, "
           "got ",
           b1.size(0), " and ", b2.size(0));
  RT_CHECK(b1.size(2) == b2.size(1), op, ": Incompatible matrix sizes for bmm (", b1.size(1), "x",
           b1.size(2), " and ", b2.size(1), "x", b2.size(2), ")");
}

/// beta * self + alpha * prod, skipping self entirely when beta is 0 (so NaNs there vanish).
Tensor add_scaled(const char* op, const Tensor& self, const Tensor& prod, const Scalar& beta,
                  const Scalar& alpha) {
  RT_CHECK(self.dtype() == prod.dtype(), op,
           ": expected self and batch1 to have the same dtype,"
           " but got ",
           self.dtype(), " != ", prod.dtype());
  RT_CHECK(is_expandable_to(self.sizes(), prod.sizes()), op, ": self of shape ", self.sizes(),
           " cannot be broadcast to the product shape ", prod.sizes());
  // PyTorch converts beta and alpha to an integral product's type first: 0.6 is 0 there, so
  // the result keeps the integral dtype (a float scalar would promote it to float).
  auto in_type = [&](const Scalar& s) {
    return is_integral_type(prod.dtype(), true) && s.is_floating_point()
               ? Scalar(int64_t(s.to_double()))
               : s;
  };
  const Scalar a = in_type(alpha), be = in_type(beta);
  Tensor p = a.to_double() == 1.0 ? prod : prod * a;
  double b = be.to_double();
  if (b == 0.0) return p;
  return (b == 1.0 ? self : self * be) + p;
}

}  // namespace

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  check_batch_operands("baddbmm", batch1, batch2);
  if (is_half_like(batch1.dtype()) && self.dtype() == batch1.dtype())
    return composite::baddbmm(self.to(kFloat), batch1.to(kFloat), batch2.to(kFloat), beta, alpha)
        .to(batch1.dtype());
  return add_scaled("baddbmm", self, batch1.bmm(batch2), beta, alpha);
}

Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
              const Scalar& alpha) {
  // PyTorch reads batch1.size(2) before checking the rank, so a 2-D batch is an IndexError.
  RT_CHECK_INDEX(batch1.dim() >= 3 && batch2.dim() >= 3,
                 "addbmm: Dimension out of range (batch1 "
                 "and batch2 must be 3-D, got shapes ",
                 batch1.sizes(), " and ", batch2.sizes(), ")");
  check_batch_operands("addbmm", batch1, batch2);
  if (is_half_like(batch1.dtype()) && self.dtype() == batch1.dtype())
    return composite::addbmm(self.to(kFloat), batch1.to(kFloat), batch2.to(kFloat), beta, alpha)
        .to(batch1.dtype());
  // sum_b batch1[b] @ batch2[b] is one (n, B*k) @ (B*k, p) product.
  int64_t B = batch1.size(0), n = batch1.size(1), k = batch1.size(2), p = batch2.size(2);
  Tensor a = batch1.permute({1, 0, 2}).reshape({n, B * k});
  Tensor b = batch2.reshape({B * k, p});
  return add_scaled("addbmm", self, a.mm(b), beta, alpha);
}

// ---------------------------------------------------------------- einsum

namespace {

// Note [einsum labels]: every operand dimension gets an integer label: letters are their
// character code, dimensions covered by '...' get kEllBase + i counted from the right, so
// ellipses of different ranks broadcast right-aligned like ordinary broadcasting.
constexpr int kEllBase = 1000;

struct Operand {
  Tensor t;
  std::vector<int> labels;
};

std::vector<int> parse_subscripts(const std::string& s, int64_t ndim, bool* has_ell, size_t index,
                                  bool output) {
  std::vector<int> letters;
  int64_t ell_pos = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      RT_CHECK(s.compare(i, 3, "...") == 0, "einsum(): found '.' for operand ", index,
               " that is not part of any ellipsis");
      RT_CHECK(ell_pos < 0, "einsum(): found '.' for operand ", index,
               " for which an ellipsis was already found");
      ell_pos = int64_t(letters.size());
      i += 2;
      continue;
    }
    RT_CHECK(std::isalpha(static_cast<unsigned char>(c)),
             "einsum(): invalid subscript given at "
             "index ",
             i, " in the equation string, subscripts must be in [a-zA-Z]");
    letters.push_back(int(c));
  }
  *has_ell = ell_pos >= 0;
  if (output) {
    std::vector<int> out;
    for (size_t i = 0; i <= letters.size(); ++i) {
      if (int64_t(i) == ell_pos)
        for (int64_t e = ndim - 1; e >= 0; --e) out.push_back(kEllBase + int(e));
      if (i < letters.size()) out.push_back(letters[i]);
    }
    return out;
  }
  int64_t nl = int64_t(letters.size());
  if (ell_pos < 0) {
    RT_CHECK(nl == ndim, "einsum(): the number of subscripts in the equation (", nl,
             ") does not match the number of dimensions (", ndim, ") for operand ", index,
             " and no ellipsis was given");
    return letters;
  }
  RT_CHECK(nl <= ndim, "einsum(): the number of subscripts in the equation (", nl,
           ") is more than the number of dimensions (", ndim, ") for operand ", index);
  std::vector<int> out(letters.begin(), letters.begin() + ell_pos);
  for (int64_t e = ndim - nl - 1; e >= 0; --e) out.push_back(kEllBase + int(e));
  out.insert(out.end(), letters.begin() + ell_pos, letters.end());
  return out;
}

/// Takes diagonals until every label of the operand is distinct ('ii->i').
void take_diagonals(Operand& op) {
  for (;;) {
    int64_t d1 = -1, d2 = -1;
    for (size_t i = 0; i < op.labels.size() && d1 < 0; ++i)
      for (size_t j = i + 1; j < op.labels.size(); ++j)
        if (op.labels[i] == op.labels[j]) {
          d1 = int64_t(i);
          d2 = int64_t(j);
          break;
        }
    if (d1 < 0) return;
    RT_CHECK(op.t.size(d1) == op.t.size(d2), "einsum(): subscript ", char(op.labels[size_t(d1)]),
             " is repeated for operand but the sizes don't match, ", op.t.size(d1),
             " != ", op.t.size(d2));
    std::vector<int64_t> perm;
    std::vector<int> labels;
    for (int64_t i = 0; i < op.t.dim(); ++i)
      if (i != d1 && i != d2) {
        perm.push_back(i);
        labels.push_back(op.labels[size_t(i)]);
      }
    int lab = op.labels[size_t(d1)];
    perm.push_back(d1);
    perm.push_back(d2);
    op.t = op.t.permute(perm).diagonal(0, -2, -1);
    labels.push_back(lab);
    op.labels = labels;
  }
}

/// Multiplies two aligned operands (same rank, global label order) and sums the dims in
/// sum_dims, keeping them as size 1; the contraction goes through one bmm.
Tensor sumproduct_pair(Tensor left, Tensor right, const std::vector<bool>& sum_dims) {
  int64_t nd = left.dim();
  std::vector<int64_t> lro, lo, ro, sum;
  for (int64_t d = 0; d < nd; ++d) {
    bool sl = left.size(d) != 1, sr = right.size(d) != 1;
    if (sum_dims[size_t(d)]) {
      if (sl && sr)
        sum.push_back(d);
      else if (sl)
        left = left.sum(IntArrayRef{d}, true);
      else if (sr)
        right = right.sum(IntArrayRef{d}, true);
    } else if (sl && sr) {
      lro.push_back(d);
    } else if (sl) {
      lo.push_back(d);
    } else if (sr) {
      ro.push_back(d);
    }
  }
  auto prod = [&](const std::vector<int64_t>& ds, const Tensor& t) {
    int64_t p = 1;
    for (int64_t d : ds) p *= t.size(d);
    return p;
  };
  int64_t nlro = prod(lro, left), nlo = prod(lo, left), nro = prod(ro, right);
  int64_t nsum = prod(sum, left);
  // Permutations [lro, lo, sum, rest] and [lro, sum, ro, rest]; rest dims have size 1.
  std::vector<bool> used(size_t(nd), false);
  for (auto* v : {&lro, &lo, &ro, &sum})
    for (int64_t d : *v) used[size_t(d)] = true;
  std::vector<int64_t> rest;
  for (int64_t d = 0; d < nd; ++d)
    if (!used[size_t(d)]) rest.push_back(d);
  auto cat_dims = [](std::initializer_list<const std::vector<int64_t>*> parts) {
    std::vector<int64_t> r;
    for (auto* p : parts) r.insert(r.end(), p->begin(), p->end());
    return r;
  };
  std::vector<int64_t> lperm = cat_dims({&lro, &lo, &sum, &ro, &rest});
  std::vector<int64_t> rperm = cat_dims({&lro, &sum, &ro, &lo, &rest});
  Tensor l = left.permute(lperm).reshape({nlro, nlo, nsum});
  Tensor r = right.permute(rperm).reshape({nlro, nsum, nro});
  Tensor out = l.bmm(r);
  // Back to the global order: sizes [lro, lo, ro] then 1 for the sum and rest dims.
  std::vector<int64_t> shape, order = cat_dims({&lro, &lo, &ro, &sum, &rest});
  for (int64_t d : lro) shape.push_back(left.size(d));
  for (int64_t d : lo) shape.push_back(left.size(d));
  for (int64_t d : ro) shape.push_back(right.size(d));
  shape.resize(size_t(nd), 1);
  std::vector<int64_t> inv(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) inv[size_t(order[size_t(i)])] = i;
  return out.reshape(shape).permute(inv);
}

}  // namespace

Tensor einsum(std::string_view equation, TensorList tensors, OptionalIntArrayRef path) {
  (void)path;  // A contraction order hint (opt_einsum); left-to-right is always valid.
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> subs;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    subs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  RT_CHECK(!tensors.empty(), "einsum(): must provide at least one operand");
  RT_CHECK(subs.size() <= tensors.size(),
           "einsum(): fewer operands were provided than specified "
           "in the equation");
  RT_CHECK(subs.size() >= tensors.size(),
           "einsum(): more operands were provided than specified "
           "in the equation");
  std::vector<Operand> ops;
  int64_t ell_dims = 0;
  std::map<int, int> counts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    bool has_ell = false;
    Operand op{tensors[i], parse_subscripts(subs[i], tensors[i].dim(), &has_ell, i, false)};
    for (int l : op.labels) {
      if (l >= kEllBase) ell_dims = std::max<int64_t>(ell_dims, l - kEllBase + 1);
    }
    // Implicit output counts a repeated label ('ii') as seen twice, so count before diagonals.
    for (int l : op.labels) counts[l]++;
    take_diagonals(op);
    ops.push_back(op);
  }
  // Output labels: explicit, or (implicit) the ellipsis then the letters seen once, sorted.
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    bool has_ell = false;
    out_labels = parse_subscripts(eq.substr(arrow + 2), ell_dims, &has_ell, 0, true);
    std::map<int, int> seen;
    for (int l : out_labels) {
      RT_CHECK(l >= kEllBase || counts.count(l), "einsum(): output subscript ", char(l),
               " does not appear in the equation for any input operand");
      RT_CHECK(++seen[l] == 1, "einsum(): output subscript ", char(l),
               " appears more than once in the output");
    }
  } else {
    for (int64_t e = ell_dims - 1; e >= 0; --e) out_labels.push_back(kEllBase + int(e));
    for (auto& [l, c] : counts)
      if (l < kEllBase && c == 1) out_labels.push_back(l);
  }
  // Global order: output labels, then the contracted ones.
  std::vector<int> order = out_labels;
  for (auto& [l, c] : counts)
    if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
  int64_t nd = int64_t(order.size());
  std::vector<int64_t> sizes(size_t(nd), 1);
  std::vector<Tensor> aligned;
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<int64_t> perm, shape;
    for (int64_t g = 0; g < nd; ++g) {
      auto it = std::find(ops[i].labels.begin(), ops[i].labels.end(), order[size_t(g)]);
      if (it == ops[i].labels.end()) {
        shape.push_back(1);
        continue;
      }
      int64_t d = it - ops[i].labels.begin();
      perm.push_back(d);
      int64_t s = ops[i].t.size(d);
      shape.push_back(s);
      RT_CHECK(s == 1 || sizes[size_t(g)] == 1 || sizes[size_t(g)] == s,
               "einsum(): operands do "
               "not broadcast with remapped shapes: operand ",
               i, " has size ", s, " for a subscript of size ", sizes[size_t(g)], " elsewhere");
      if (s != 1) sizes[size_t(g)] = s;
    }
    aligned.push_back(ops[i].t.permute(perm).reshape(shape));
  }
  // Fold left to right, summing a contracted label once no later operand has it.
  int64_t n_out = int64_t(out_labels.size());
  auto later_has = [&](size_t from, int64_t g) {
    for (size_t j = from; j < aligned.size(); ++j)
      if (aligned[j].size(g) != 1) return true;
    return false;
  };
  Tensor result = aligned[0];
  for (size_t i = 1; i < aligned.size(); ++i) {
    std::vector<bool> sum_dims(size_t(nd), false);
    for (int64_t g = n_out; g < nd; ++g) sum_dims[size_t(g)] = !later_has(i + 1, g);
    result = sumproduct_pair(result, aligned[i], sum_dims);
  }
  if (nd > n_out) {
    std::vector<int64_t> sdims;
    for (int64_t g = n_out; g < nd; ++g)
      if (result.size(g) != 1) sdims.push_back(g);  // (size-1 dims need no sum, just the view)
    if (!sdims.empty()) result = result.sum(sdims, true);
  }
  // Size-1 broadcast dims of the output expand to the full label size (e.g. a label only in a
  // summed-out operand), then the contracted dims are dropped.
  std::vector<int64_t> full(sizes.begin(), sizes.end());
  for (int64_t g = n_out; g < nd; ++g) full[size_t(g)] = 1;
  result = result.expand(full);
  std::vector<int64_t> out_shape(sizes.begin(), sizes.begin() + n_out);
  return result.reshape(out_shape);
}

Tensor tensordot(const Tensor& self, const Tensor& other, IntArrayRef dims_self,
                 IntArrayRef dims_other) {
  RT_CHECK(dims_self.size() == dims_other.size(),
           "tensordot: both dimension lists should have "
           "same length (got ",
           dims_self.size(), " and ", dims_other.size(), ")");
  std::vector<bool> cs(size_t(self.dim()), false), co(size_t(other.dim()), false);
  std::vector<int64_t> ps, po, free_shape;
  int64_t K = 1;
  for (size_t i = 0; i < dims_self.size(); ++i) {
    int64_t a = maybe_wrap_dim(dims_self[i], self.dim(), "tensordot");
    int64_t b = maybe_wrap_dim(dims_other[i], other.dim(), "tensordot");
    RT_CHECK(self.size(a) == other.size(b),
             "tensordot: contracted dimensions need to match, but "
             "first has size ",
             self.size(a), " in dim ", a, " and second has size ", other.size(b), " in dim ", b);
    RT_CHECK(!cs[size_t(a)] && !co[size_t(b)], "tensordot: dim ", a,
             " appears multiple times in "
             "the list of dims");
    cs[size_t(a)] = co[size_t(b)] = true;
    K *= self.size(a);
  }
  std::vector<int64_t> perm_s, perm_o;
  int64_t P = 1, Q = 1;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (!cs[size_t(d)]) {
      perm_s.push_back(d);
      free_shape.push_back(self.size(d));
      P *= self.size(d);
    }
  for (size_t i = 0; i < dims_self.size(); ++i) {
    perm_s.push_back(maybe_wrap_dim(dims_self[i], self.dim(), "tensordot"));
    perm_o.push_back(maybe_wrap_dim(dims_other[i], other.dim(), "tensordot"));
  }
  for (int64_t d = 0; d < other.dim(); ++d)
    if (!co[size_t(d)]) {
      perm_o.push_back(d);
      free_shape.push_back(other.size(d));
      Q *= other.size(d);
    }
  Tensor a = self.permute(perm_s).reshape({P, K});
  Tensor b = other.permute(perm_o).reshape({K, Q});
  return a.mm(b).reshape(free_shape);
}

Tensor kron(const Tensor& self, const Tensor& other) {
  int64_t nd = std::max(self.dim(), other.dim());
  std::vector<int64_t> sa(size_t(nd - self.dim()), 1), sb(size_t(nd - other.dim()), 1);
  for (int64_t s : self.sizes()) sa.push_back(s);
  for (int64_t s : other.sizes()) sb.push_back(s);
  // Interleave: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...).
  std::vector<int64_t> va, vb, out;
  for (int64_t d = 0; d < nd; ++d) {
    va.insert(va.end(), {sa[size_t(d)], 1});
    vb.insert(vb.end(), {1, sb[size_t(d)]});
    out.push_back(sa[size_t(d)] * sb[size_t(d)]);
  }
  return (self.reshape(va) * other.reshape(vb)).reshape(out);
}

Tensor linalg_cross(const Tensor& self, const Tensor& other, int64_t dim) {
  RT_CHECK(self.dim() == other.dim(),
           "linalg.cross: inputs must have the same number of "
           "dimensions (got shapes ",
           self.sizes(), " and ", other.sizes(), ")");
  RT_CHECK(self.dtype() == other.dtype(), "linalg.cross: expected scalar type ", self.dtype(),
           " but found ", other.dtype());
  auto shape = broadcast_shapes(self.sizes(), other.sizes(), "linalg.cross");
  int64_t d = maybe_wrap_dim(dim, int64_t(shape.size()), "linalg.cross");
  RT_CHECK(self.size(d) == 3 && other.size(d) == 3, "linalg.cross: inputs dimension ", dim,
           " must have length 3. Got ", self.size(d), " and ", other.size(d));
  Tensor a = self.expand(IntArrayRef(shape)), b = other.expand(IntArrayRef(shape));
  auto c = [d](const Tensor& t, int64_t i) { return t.narrow(d, i, 1); };
  return cat({c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1), c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2),
              c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)},
             d);
}

Tensor cross(const Tensor& self, const Tensor& other, std::optional<int64_t> dim) {
  if (dim) return retorch::linalg_cross(self, other, *dim);
  // Deprecated default: the first dimension of size 3.
  RT_CHECK(self.dim() == other.dim(), "cross: inputs must have the same number of dimensions");
  auto shape = broadcast_shapes(self.sizes(), other.sizes(), "cross");
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 3) return retorch::linalg_cross(self, other, int64_t(i));
  RT_CHECK(false, "no dimension of size 3 in input (shape ", IntArrayRef(shape), ")");
  return Tensor();
}

Tensor trace(const Tensor& self) {
  RT_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  RT_CHECK(self.dtype() != kBool, "\"trace\" not implemented for 'Bool'");
  return self.diagonal(0, -2, -1).sum(OptionalIntArrayRef(), false, std::nullopt);
}

// ---------------------------------------------------------------- distances and norms

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  RT_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  RT_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  RT_CHECK(x1.size(-1) == x2.size(-1),
           "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
           " X2: ", x2.size(-1));
  RT_CHECK(is_floating_type(x1.dtype()),
           "cdist only supports floating-point dtypes, X1 got: ", x1.dtype());
  RT_CHECK(is_floating_type(x2.dtype()),
           "cdist only supports floating-point dtypes, X2 got: ", x2.dtype());
  RT_CHECK(p >= 0, "cdist only supports non-negative p values");
  RT_CHECK(x1.dtype() == x2.dtype(), "cdist: expected scalar type ", x1.dtype(), " but found ",
           x2.dtype());
  int64_t mode = compute_mode.value_or(0);
  RT_CHECK(mode >= 0 && mode <= 2, "possible modes: None, 1, 2, but was: ", mode);
  int64_t r1 = x1.size(-2), r2 = x2.size(-2);
  // PyTorch's rule for the matmul path: p = 2 and enough rows (or asked for explicitly).
  if (p == 2 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25))) && x1.size(-1) > 0) {
    auto batch = broadcast_shapes(IntArrayRef(x1.sizes().begin(), x1.sizes().end() - 2),
                                  IntArrayRef(x2.sizes().begin(), x2.sizes().end() - 2), "cdist");
    std::vector<int64_t> s1(batch.begin(), batch.end()), s2 = s1;
    s1.insert(s1.end(), {r1, x1.size(-1)});
    s2.insert(s2.end(), {r2, x2.size(-1)});
    return _euclidean_dist(x1.expand(s1), x2.expand(s2));
  }
  Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);
  return retorch::linalg_vector_norm(diff, Scalar(p), IntArrayRef{-1}, false, std::nullopt);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  ScalarType dt = promote_types(x1.dtype(), x2.dtype());
  RT_CHECK(is_floating_type(dt),
           "cosine_similarity: expected common dtype to be floating point, "
           "yet common dtype is ",
           dt);
  auto shape = broadcast_shapes(x1.sizes(), x2.sizes(), "cosine_similarity");
  Tensor a = x1.to(dt).expand(IntArrayRef(shape)), b = x2.to(dt).expand(IntArrayRef(shape));
  // Each input is divided by its norm clamped to eps; like PyTorch, the clamp is invisible to
  // autograd (applied under no_grad there), hence the detached correction.
  auto clamped_norm = [&](const Tensor& t) {
    Tensor n = retorch::linalg_vector_norm(t, Scalar(2), IntArrayRef{dim}, true, std::nullopt);
    return n + (n.clamp(Scalar(eps), std::nullopt) - n).detach();
  };
  return ((a / clamped_norm(a)) * (b / clamped_norm(b))).sum(IntArrayRef{dim}, false);
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  int64_t out_dim = std::max(x1.dim(), x2.dim());
  int64_t inner = out_dim - 1;
  if (out_dim == 0)
    return retorch::linalg_vector_norm(x1 - x2 + Scalar(eps), Scalar(p), std::nullopt, keepdim,
                                       std::nullopt);
  return retorch::linalg_vector_norm(x1 - x2 + Scalar(eps), Scalar(p), IntArrayRef{inner}, keepdim,
                                     std::nullopt);
}

Tensor linalg_vector_norm(const Tensor& self, const Scalar& ord, OptionalIntArrayRef dim,
                          bool keepdim, std::optional<ScalarType> dtype) {
  RT_CHECK(is_floating_type(self.dtype()),
           "linalg.vector_norm: Expected a floating point or "
           "complex tensor as input. Got ",
           self.dtype());
  if (dtype) {
    RT_CHECK(is_floating_type(*dtype),
             "linalg.vector_norm: dtype should be floating point, "
             "but got ",
             *dtype);
  }
  Tensor x = dtype ? self.to(*dtype) : self;
  double p = ord.to_double();
  bool empty_reduction = x.numel() == 0 && (!dim || dim->empty());
  if (dim)
    for (int64_t d : *dim)
      if (x.dim() > 0 && x.size(maybe_wrap_dim(d, x.dim(), "linalg.vector_norm")) == 0)
        empty_reduction = true;
  if (std::isinf(p) && empty_reduction) {
    RT_CHECK(false, "linalg.vector_norm cannot compute the ", ord,
             " norm on an empty tensor "
             "because the operation does not have an identity");
  }
  return retorch::norm(x, ord, dim, keepdim);
}

namespace {

/// dim (two distinct, wrapped) dims of a matrix norm; the input must be at least 2-D.
std::pair<int64_t, int64_t> matrix_norm_dims(const Tensor& A, IntArrayRef dim) {
  RT_CHECK(A.dim() >= 2,
           "linalg.matrix_norm: The input tensor A must have at least 2 "
           "dimensions.");
  RT_CHECK(dim.size() == 2, "linalg.matrix_norm: dim must be a 2-tuple. Got ", dim);
  int64_t d0 = maybe_wrap_dim(dim[0], A.dim(), "linalg.matrix_norm");
  int64_t d1 = maybe_wrap_dim(dim[1], A.dim(), "linalg.matrix_norm");
  RT_CHECK(d0 != d1, "linalg.matrix_norm: dims must be different. Got (", dim[0], ", ", dim[1],
           ")");
  return {d0, d1};
}

/// f of the singular values with the two dims moved last, re-inserted when keepdim.
Tensor svd_norm(const Tensor& A, int64_t d0, int64_t d1, bool keepdim, int kind) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < A.dim(); ++d)
    if (d != d0 && d != d1) perm.push_back(d);
  perm.insert(perm.end(), {d0, d1});
  Tensor m = A.permute(perm);
  Tensor S = retorch::linalg_svdvals(m, std::nullopt);
  Tensor r = kind == 0
                 ? S.sum(IntArrayRef{-1}, false, std::nullopt)
                 : (kind > 0 ? S.amax(IntArrayRef{-1}, false) : S.amin(IntArrayRef{-1}, false));
  if (keepdim) {
    r = r.unsqueeze(std::min(d0, d1));
    r = r.unsqueeze(std::max(d0, d1));
  }
  return r;
}

}  // namespace

Tensor linalg_matrix_norm(const Tensor& self, const Scalar& ord, IntArrayRef dim, bool keepdim,
                          std::optional<ScalarType> dtype) {
  RT_CHECK(is_floating_type(self.dtype()),
           "linalg.matrix_norm: Expected a floating point or "
           "complex tensor as input. Got ",
           self.dtype());
  auto [d0, d1] = matrix_norm_dims(self, dim);
  Tensor A = dtype ? self.to(*dtype) : self;
  double p = ord.to_double();
  if (std::abs(p) == 2) {
    RT_CHECK(!is_half_like(A.dtype()),
             "linalg.matrix_norm: Low precision dtypes not supported. "
             "Got ",
             A.dtype());
    return svd_norm(A, d0, d1, keepdim, p > 0 ? 1 : -1);
  }
  RT_CHECK(std::abs(p) == 1 || std::isinf(p), "linalg.matrix_norm: Order ", ord, " not supported.");
  // ord 1: max column sum (sum over rows d0, extreme over d1); inf: the transpose.
  int64_t sum_dim = std::abs(p) == 1 ? d0 : d1, ext_dim = std::abs(p) == 1 ? d1 : d0;
  Tensor s = A.abs().sum(IntArrayRef{sum_dim}, true, std::nullopt);
  Tensor r = p > 0 ? s.amax(IntArrayRef{ext_dim}, true) : s.amin(IntArrayRef{ext_dim}, true);
  if (!keepdim) r = r.squeeze(std::max(d0, d1)).squeeze(std::min(d0, d1));
  return r;
}

Tensor linalg_matrix_norm_str_ord(const Tensor& self, std::string_view ord, IntArrayRef dim,
                                  bool keepdim, std::optional<ScalarType> dtype) {
  RT_CHECK(ord == "fro" || ord == "nuc", "linalg.matrix_norm: Order ", ord, " not supported.");
  RT_CHECK(is_floating_type(self.dtype()),
           "linalg.matrix_norm: Expected a floating point or "
           "complex tensor as input. Got ",
           self.dtype());
  auto [d0, d1] = matrix_norm_dims(self, dim);
  Tensor A = dtype ? self.to(*dtype) : self;
  if (ord == "nuc") {
    RT_CHECK(!is_half_like(A.dtype()),
             "linalg.matrix_norm: Low precision dtypes not supported. "
             "Got ",
             A.dtype());
    return svd_norm(A, d0, d1, keepdim, 0);
  }
  return retorch::linalg_vector_norm(A, Scalar(2), IntArrayRef{d0, d1}, keepdim, std::nullopt);
}

// ---------------------------------------------------------------- LAPACK wrappers

std::tuple<Tensor, Tensor> triangular_solve(const Tensor& self, const Tensor& A, bool upper,
                                            bool transpose, bool unitriangular) {
  RT_CHECK(self.dim() >= 2,
           "torch.triangular_solve: Expected b to have at least 2 dimensions, "
           "but it has ",
           self.dim(), " dimensions instead");
  RT_CHECK(A.dim() >= 2,
           "torch.triangular_solve: Expected A to have at least 2 dimensions, but "
           "it has ",
           A.dim(), " dimensions instead");
  Tensor M = transpose ? mT(A) : A;
  Tensor X = linalg_solve_triangular(M, self, upper != transpose, true, unitriangular);
  return {X, A.clone()};
}

Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left) {
  RT_CHECK(A.dim() >= 2, "linalg.solve: The input tensor A must have at least 2 dimensions.");
  // B is a (batch of) vector(s) when it is 1-D or has exactly A's batch shape plus one dim.
  bool vector_case = B.dim() == 1 || (B.dim() == A.dim() - 1 &&
                                      B.sizes() == A.sizes().slice(0, size_t(A.dim() - 1)));
  Tensor b = vector_case ? B.unsqueeze(-1) : B;
  RT_CHECK(left || (b.dim() >= 2 && b.size(-1) == A.size(-1)),
           "linalg.solve: Incompatible "
           "shapes of A and B for the equation XA = B (",
           A.size(-2), "x", A.size(-1), " and ", b.size(-2), "x", b.size(-1), ")");
  Tensor X = left ? _linalg_solve(A, b) : mT(_linalg_solve(mT(A), mT(b)));
  return vector_case ? X.squeeze(-1) : X;
}

Tensor inverse(const Tensor& self) {
  return linalg_inv(self);
}
Tensor det(const Tensor& self) {
  return linalg_det(self);
}
std::tuple<Tensor, Tensor> slogdet(const Tensor& self) {
  return linalg_slogdet(self);
}
Tensor cholesky(const Tensor& self, bool upper) {
  return linalg_cholesky(self, upper);
}

std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& A, bool full_matrices,
                                              std::optional<std::string_view> driver) {
  return _linalg_svd(A, full_matrices, true, driver);
}

Tensor linalg_svdvals(const Tensor& A, std::optional<std::string_view> driver) {
  // The vectors are computed too: the backward of the singular values needs them.
  return std::get<1>(_linalg_svd(A, false, true, driver));
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& self, bool some, bool compute_uv) {
  if (!compute_uv) {
    // torch.svd returns zero-filled U (m, m) and V (n, n) then.
    Tensor S = retorch::linalg_svdvals(self, std::nullopt);
    std::vector<int64_t> su = vec(self.sizes()), sv = vec(self.sizes());
    su.back() = self.size(-2);
    sv[sv.size() - 2] = self.size(-1);
    return {zeros(su, TensorOptions().dtype(self.dtype())), S,
            zeros(sv, TensorOptions().dtype(self.dtype()))};
  }
  auto [U, S, Vh] = _linalg_svd(self, !some, true, std::nullopt);
  return {U, S, mT(Vh)};
}

std::tuple<Tensor, Tensor> linalg_eigh(const Tensor& self, std::string_view UPLO) {
  return _linalg_eigh(self, UPLO, true);
}

Tensor linalg_eigvalsh(const Tensor& self, std::string_view UPLO) {
  return std::get<0>(_linalg_eigh(self, UPLO, true));
}

}  // namespace retorch::composite
