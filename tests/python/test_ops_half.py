"""The float16/bfloat16 audit: each pointwise and reduction op of ops.yaml against torch."""
import pytest
import torch.nn.functional as F

import test_ops_pointwise
import test_ops_special
from custom_helpers import P, aten, both
from oracle import load_ops
from test_ops_pointwise import ACTIVATION_BACKWARDS, act, is_torch

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_half_bfloat16_audit": [],  # filled in below from HALF_CASES
}


# ---------------------------------------------------------------- float16 / bfloat16 audit

def _x(rng, dt, shape=(3, 4), **kw):
    return P(rng, shape, dt, **kw)


# Every pointwise or reduction op of ops.yaml (all families) -> a call and its inputs. The sweep
# already runs the generic kinds on float16/bfloat16; this table runs each op once more in both
# 16-bit dtypes, including the hand-tested ones, so none is missed.
HALF_CASES = {
    "clone": (lambda L, x: L.clone(x), {}),
    "exp": (lambda L, x: L.exp(x), {}), "exp2": (lambda L, x: L.exp2(x), {}),
    "log": (lambda L, x: L.log(x), {"domain": "positive"}),
    "log2": (lambda L, x: L.log2(x), {"domain": "positive"}),
    "log10": (lambda L, x: L.log10(x), {"domain": "positive"}),
    "log1p": (lambda L, x: L.log1p(x), {"domain": "positive"}),
    "expm1": (lambda L, x: L.expm1(x), {}),
    "sqrt": (lambda L, x: L.sqrt(x), {"domain": "positive"}),
    "rsqrt": (lambda L, x: L.rsqrt(x), {"domain": "positive"}),
    "sin": (lambda L, x: L.sin(x), {}), "cos": (lambda L, x: L.cos(x), {}),
    "tan": (lambda L, x: L.tan(x), {"domain": "small"}),
    "asin": (lambda L, x: L.asin(x), {"domain": "unit"}),
    "acos": (lambda L, x: L.acos(x), {"domain": "unit"}),
    "atan": (lambda L, x: L.atan(x), {}), "sinh": (lambda L, x: L.sinh(x), {}),
    "cosh": (lambda L, x: L.cosh(x), {}), "tanh": (lambda L, x: L.tanh(x), {}),
    "sigmoid": (lambda L, x: L.sigmoid(x), {}), "erf": (lambda L, x: L.erf(x), {}),
    "reciprocal": (lambda L, x: L.reciprocal(x), {"domain": "nonzero"}),
    "silu": (lambda L, x: F.silu(x) if is_torch(L) else L.silu(x), {}),
    "gelu": (lambda L, x: F.gelu(x, approximate="tanh") if is_torch(L) else
             L.gelu(x, approximate="tanh"), {}),
    "softplus": (lambda L, x: F.softplus(x, 2, 1) if is_torch(L) else L.softplus(x, 2, 1), {}),
    "neg": (lambda L, x: L.neg(x), {}), "abs": (lambda L, x: L.abs(x), {}),
    "sign": (lambda L, x: L.sign(x), {}), "relu": (lambda L, x: L.relu(x), {}),
    "floor": (lambda L, x: L.floor(x), {}), "ceil": (lambda L, x: L.ceil(x), {}),
    "round": (lambda L, x: L.round(x), {}), "trunc": (lambda L, x: L.trunc(x), {}),
    "round.decimals": (lambda L, x: L.round(x, decimals=1), {}),
    "isnan": (lambda L, x: L.isnan(x), {"special": True}),
    "logical_not": (lambda L, x: L.logical_not(x), {}),
    "add.Tensor": (lambda L, x, y: L.add(x, y, alpha=2), {}, 2),
    "sub.Tensor": (lambda L, x, y: L.sub(x, y), {}, 2),
    "mul.Tensor": (lambda L, x, y: L.mul(x, y), {}, 2),
    "div.Tensor": (lambda L, x, y: L.div(x, y), {"domain": "nonzero"}, 2),
    "div.Tensor_mode": (lambda L, x, y: L.div(x, y, rounding_mode="floor"),
                        {"domain": "nonzero"}, 2),
    "pow.Tensor_Tensor": (lambda L, x, y: L.pow(x, y), {"domain": "positive"}, 2),
    "pow.Tensor_Scalar": (lambda L, x: L.pow(x, 2.5), {"domain": "positive"}),
    "pow.Scalar": (lambda L, x: L.pow(1.7, x), {}),
    "maximum": (lambda L, x, y: L.maximum(x, y), {}, 2),
    "minimum": (lambda L, x, y: L.minimum(x, y), {}, 2),
    "remainder.Tensor": (lambda L, x, y: L.remainder(x, y), {"domain": "nonzero"}, 2),
    "fmod.Tensor": (lambda L, x, y: L.fmod(x, y), {"domain": "nonzero"}, 2),
    "atan2": (lambda L, x, y: L.atan2(x, y), {}, 2),
    "eq.Tensor": (lambda L, x, y: L.eq(x, y), {}, 2),
    "ne.Tensor": (lambda L, x, y: L.ne(x, y), {}, 2),
    "lt.Tensor": (lambda L, x, y: L.lt(x, y), {}, 2),
    "le.Tensor": (lambda L, x, y: L.le(x, y), {}, 2),
    "gt.Tensor": (lambda L, x, y: L.gt(x, y), {}, 2),
    "ge.Tensor": (lambda L, x, y: L.ge(x, y), {}, 2),
    "logical_and": (lambda L, x, y: L.logical_and(x, y), {}, 2),
    "logical_or": (lambda L, x, y: L.logical_or(x, y), {}, 2),
    "logical_xor": (lambda L, x, y: L.logical_xor(x, y), {}, 2),
    "where.self": (lambda L, x, y: L.where(x > 0, x, y), {}, 2),
    "where.ScalarOther": (lambda L, x: L.where(x > 0, x, 0.3), {}),
    "where.ScalarSelf": (lambda L, x: L.where(x > 0, -0.7, x), {}),
    "clamp": (lambda L, x: L.clamp(x, -0.5, 0.7), {}),
    "lerp.Scalar": (lambda L, x, y: L.lerp(x, y, 0.3), {}, 2),
    "lerp.Tensor": (lambda L, x, y: L.lerp(x, y, y), {}, 2),
    "addcmul": (lambda L, x, y: L.addcmul(x, y, x, value=0.5), {}, 2),
    "addcdiv": (lambda L, x, y: L.addcdiv(x, x, y, value=0.5), {"domain": "nonzero"}, 2),
    "masked_fill.Scalar": (lambda L, x: L.masked_fill(x, x > 0, 1.5), {}),
    "sum": (lambda L, x: L.sum(x), {}),
    "sum.dim_IntList": (lambda L, x: L.sum(x, 1), {}),
    "mean": (lambda L, x: L.mean(x), {}), "mean.dim": (lambda L, x: L.mean(x, 0), {}),
    "prod": (lambda L, x: L.prod(x), {"domain": "nonzero"}),
    "prod.dim_int": (lambda L, x: L.prod(x, 1), {"domain": "nonzero"}),
    "amax": (lambda L, x: L.amax(x, 1), {}), "amin": (lambda L, x: L.amin(x, 0), {}),
    "max": (lambda L, x: L.max(x), {}), "min": (lambda L, x: L.min(x), {}),
    "max.dim": (lambda L, x: L.max(x, 1)[0], {"distinct": True}),
    "min.dim": (lambda L, x: L.min(x, 1)[0], {"distinct": True}),
    "max.other": (lambda L, x, y: L.max(x, y), {}, 2),
    "min.other": (lambda L, x, y: L.min(x, y), {}, 2),
    "argmax": (lambda L, x: L.argmax(x, 1), {"distinct": True}),
    "argmin": (lambda L, x: L.argmin(x, 0), {"distinct": True}),
    "var.correction": (lambda L, x: L.var(x, 1, correction=0), {}),
    "var": (lambda L, x: L.var(x, 0, True), {}),
    "std.correction": (lambda L, x: L.std(x, 1, correction=1), {}),
    "std": (lambda L, x: L.std(x, 1, False), {}),
    "norm": (lambda L, x: L.norm(x, 3, 1), {}),
    "logsumexp": (lambda L, x: L.logsumexp(x, 1), {}),
    "softmax.int": (lambda L, x: L.softmax(x, 1), {}),
    "log_softmax.int": (lambda L, x: L.log_softmax(x, 0), {}),
    "cumsum": (lambda L, x: L.cumsum(x, 1), {}),
    "all": (lambda L, x: L.all(x), {}), "all.dim": (lambda L, x: L.all(x, 1), {}),
    "any": (lambda L, x: L.any(x), {}), "any.dim": (lambda L, x: L.any(x, 0), {}),
    # this family
    "lgamma": (lambda L, x: L.lgamma(x), {}), "digamma": (lambda L, x: L.digamma(x), {}),
    "polygamma": (lambda L, x: L.polygamma(2, x), {"domain": "positive"}),
    "polygamma_": (lambda L, x: x.clone().polygamma_(1), {"domain": "positive"}),
    "erfinv": (lambda L, x: L.erfinv(x), {"domain": "unit"}),
    "erfc": (lambda L, x: L.erfc(x), {}), "i0": (lambda L, x: L.i0(x), {}),
    "special_i1": (lambda L, x: L.special.i1(x), {}), "sinc": (lambda L, x: L.sinc(x), {}),
    "igamma": (lambda L, x, y: L.igamma(x, y), {"domain": "positive"}, 2),
    "igammac": (lambda L, x, y: L.igammac(x, y), {"domain": "positive"}, 2),
    "special_bessel_j0": (lambda L, x: L.special.bessel_j0(x), {}),
    "special_bessel_j1": (lambda L, x: L.special.bessel_j1(x), {}),
    "special_bessel_y0": (lambda L, x: L.special.bessel_y0(x), {"domain": "positive"}),
    "special_bessel_y1": (lambda L, x: L.special.bessel_y1(x), {"domain": "positive"}),
    "special_ndtri": (lambda L, x: L.special.ndtri(x), {"domain": "probability"}),
    "special_i0e": (lambda L, x: L.special.i0e(x), {}),
    "special_i1e": (lambda L, x: L.special.i1e(x), {}),
    "special_airy_ai": (lambda L, x: L.special.airy_ai(x), {}),
    "special_log_ndtr": (lambda L, x: L.special.log_ndtr(x), {}),
    "special_entr": (lambda L, x: L.special.entr(x), {}),
    "special_modified_bessel_i0": (lambda L, x: L.special.modified_bessel_i0(x), {}),
    "special_modified_bessel_i1": (lambda L, x: L.special.modified_bessel_i1(x), {}),
    "special_modified_bessel_k0": (lambda L, x: L.special.modified_bessel_k0(x), {"domain": "positive"}),
    "special_modified_bessel_k1": (lambda L, x: L.special.modified_bessel_k1(x), {"domain": "positive"}),
    "special_scaled_modified_bessel_k0": (lambda L, x: L.special.scaled_modified_bessel_k0(x), {"domain": "positive"}),
    "special_scaled_modified_bessel_k1": (lambda L, x: L.special.scaled_modified_bessel_k1(x), {"domain": "positive"}),
    "special_chebyshev_polynomial_t": (lambda L, x, n: L.special.chebyshev_polynomial_t(x, n * 4), {}, 2),
    "special_chebyshev_polynomial_u": (lambda L, x, n: L.special.chebyshev_polynomial_u(x, n * 4), {}, 2),
    "special_chebyshev_polynomial_v": (lambda L, x, n: L.special.chebyshev_polynomial_v(x, n * 4), {}, 2),
    "special_chebyshev_polynomial_w": (lambda L, x, n: L.special.chebyshev_polynomial_w(x, n * 4), {}, 2),
    "special_shifted_chebyshev_polynomial_t": (lambda L, x, n: L.special.shifted_chebyshev_polynomial_t(x, n * 4), {}, 2),
    "special_shifted_chebyshev_polynomial_u": (lambda L, x, n: L.special.shifted_chebyshev_polynomial_u(x, n * 4), {}, 2),
    "special_shifted_chebyshev_polynomial_v": (lambda L, x, n: L.special.shifted_chebyshev_polynomial_v(x, n * 4), {}, 2),
    "special_shifted_chebyshev_polynomial_w": (lambda L, x, n: L.special.shifted_chebyshev_polynomial_w(x, n * 4), {}, 2),
    "special_hermite_polynomial_h": (lambda L, x, n: L.special.hermite_polynomial_h(x, n * 4), {}, 2),
    "special_hermite_polynomial_he": (lambda L, x, n: L.special.hermite_polynomial_he(x, n * 4), {}, 2),
    "special_laguerre_polynomial_l": (lambda L, x, n: L.special.laguerre_polynomial_l(x, n * 4), {}, 2),
    "special_legendre_polynomial_p": (lambda L, x, n: L.special.legendre_polynomial_p(x, n * 4), {}, 2),
    "logit": (lambda L, x: L.logit(x, 0.1), {"domain": "unit"}),
    "xlogy.Tensor": (lambda L, x, y: L.xlogy(x, y), {"domain": "positive"}, 2),
    "xlogy.Scalar_Self": (lambda L, x: L.xlogy(2.5, x), {"domain": "positive"}),
    "xlogy.Scalar_Other": (lambda L, x: L.xlogy(x, 3), {}),
    "isinf": (lambda L, x: L.isinf(x), {"special": True}),
    "isfinite": (lambda L, x: L.isfinite(x), {"special": True}),
    "isposinf": (lambda L, x: L.isposinf(x), {"special": True}),
    "isneginf": (lambda L, x: L.isneginf(x), {"special": True}),
    "nan_to_num": (lambda L, x: L.nan_to_num(x), {"special": True}),
    "isclose": (lambda L, x, y: L.isclose(x, y, 0.5, 0.5), {}, 2),
    "allclose": (lambda L, x, y: L.allclose(x, y, 0.5, 0.5), {}, 2),
    "histc": (lambda L, x: L.histc(x, 7), {}),
    "clamp.Tensor": (lambda L, x, y: L.clamp(x, y, y + 0.5), {}, 2),
    "clamp_min": (lambda L, x: L.clamp_min(x, 0.1), {}),
    "clamp_min_": (lambda L, x: x.clone().clamp_min_(0.1), {}),
    "clamp_min.Tensor": (lambda L, x, y: L.clamp_min(x, y), {}, 2),
    "clamp_min_.Tensor": (lambda L, x, y: x.clone().clamp_min_(y), {}, 2),
    "clamp_max": (lambda L, x: L.clamp_max(x, 0.1), {}),
    "clamp_max_": (lambda L, x: x.clone().clamp_max_(0.1), {}),
    "clamp_max.Tensor": (lambda L, x, y: L.clamp_max(x, y), {}, 2),
    "clamp_max_.Tensor": (lambda L, x, y: x.clone().clamp_max_(y), {}, 2),
    "where.Scalar": (lambda L, x: L.where(x > 0, 1.0, 0.0).to(x.dtype), {}),
    "where": (lambda L, x: L.where(x.relu()), {}),
    "threshold_backward": (lambda L, x, y: aten(L, "threshold_backward")(x, y, 0.25), {}, 2),
    "copysign.Tensor": (lambda L, x, y: L.copysign(x, y), {}, 2),
    "hypot": (lambda L, x, y: L.hypot(x, y), {}, 2),
    "heaviside": (lambda L, x, y: L.heaviside(x, y), {}, 2),
    "frac": (lambda L, x: L.frac(x * 3), {}),
    "signbit": (lambda L, x: L.signbit(x), {}),
    "fmax": (lambda L, x, y: L.fmax(x, y), {}, 2),
    "fmin": (lambda L, x, y: L.fmin(x, y), {}, 2),
    "logaddexp": (lambda L, x, y: L.logaddexp(x, y), {}, 2),
    "logaddexp2": (lambda L, x, y: L.logaddexp2(x, y), {}, 2),
}
for _n in ("hardtanh", "relu6", "hardswish", "hardsigmoid", "mish", "elu", "selu", "celu",
           "leaky_relu", "softsign", "tanhshrink", "logsigmoid", "hardshrink", "softshrink",
           "glu", "rrelu"):
    HALF_CASES[_n] = ((lambda n: lambda L, x: act(L, n)(x))(_n), {})
for _n, (_f, _dom) in ACTIVATION_BACKWARDS.items():
    if " " not in _n:
        HALF_CASES[_n] = (_f, {"domain": _dom} if _dom else {}, 2)
# (the saved output as given: a softmax computed in 16 bits first differs by an ulp from torch's,
# which the backward's cancellation magnifies)
for _n in ("_softmax_backward_data", "_log_softmax_backward_data"):
    HALF_CASES[_n] = ((lambda n: lambda L, g, y: aten(L, n)(g, y, -1, y.dtype))(_n),
                      {"domain": "unit"}, 2)
HALF_CASES["threshold"] = (lambda L, x: act(L, "threshold")(x, 0.25, -2.0), {})
HALF_CASES["softmin"] = (lambda L, x: act(L, "softmin")(x, 1), {})
HALF_CASES["prelu"] = (lambda L, x, y: L.prelu(x, y[0, :1]), {}, 2)
HALF_CASES["log_sigmoid_forward"] = (lambda L, x: aten(L, "log_sigmoid_forward")(x), {})
CUSTOM["test_half_bfloat16_audit"] = sorted(HALF_CASES)

# Pointwise and reduction ops without a float16/bfloat16 meaning (integer-only, or factories).
# Integer-only ops: no float16/bfloat16 case (they refuse floating dtypes, as in torch).
NOT_FLOAT = {"bincount", "bitwise_not", "bitwise_and.Tensor", "bitwise_or.Tensor",
             "bitwise_xor.Tensor", "bitwise_left_shift.Tensor", "bitwise_right_shift.Tensor"}
# Cases above that index dimensions (no 0-dim variant).
NEEDS_DIMS = {"glu", "softmin", "max.dim", "min.dim", "argmax", "argmin", "prelu", "cumsum",
              "softmax.int", "log_softmax.int", "amax", "amin", "norm", "var.correction", "var",
              "std.correction", "std", "logsumexp", "sum.dim_IntList", "mean.dim",
              "prod.dim_int", "all.dim", "any.dim"}


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(HALF_CASES))
def test_half_bfloat16_audit(rng, name, dt):
    f, kw, *n = HALF_CASES[name]
    args = [P(rng, (3, 4), dt, "transposed" if i == 0 else "contig", **kw)
            for i in range(n[0] if n else 1)]
    both(f, *args, what=f"{name} {dt}")
    if name not in NEEDS_DIMS:
        both(f, *[P(rng, (), dt, **kw) for _ in args], what=f"{name} {dt} 0-dim")


def test_half_audit_lists_every_pointwise_and_reduction_op():
    """Each ops.yaml entry whose sweep kind is pointwise or a reduction, or which lives in the
    pointwise or special family (a CUSTOM table of test_ops_pointwise.py, test_ops_special.py or
    this file), has a float16/bfloat16 case above."""
    kinds = ("unary", "unary_float", "binary", "ternary", "reduce", "reduce_all", "reduce_one",
             "reduce_opt", "softmax")
    tables = (test_ops_pointwise.CUSTOM, test_ops_special.CUSTOM, CUSTOM)
    listed = {op for table in tables for ops in table.values() for op in ops}
    family = {e["name"] for e in load_ops() if e["name"] in listed}
    want = {e["name"] for e in load_ops() if e["test"].get("kind") in kinds}
    want |= family
    want -= NOT_FLOAT | {"detach", "contiguous"}
    missing = sorted(want - set(HALF_CASES))
    assert not missing, f"no float16/bfloat16 case for {missing}"
