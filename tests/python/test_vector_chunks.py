"""Kernels that run SLEEF's vector functions an L1-sized chunk at a time (binary_vec_loop and
binary_unary_chain_loop in Loops.h, vec_chunked in VecMath.h, Note [Vector erfinv]): spans
longer than one chunk with a ragged tail, NaN, infinities, zeros and signed zeros in every
chunk, a broadcast scalar operand, float64, in-place and out= forms, against torch."""
import numpy as np
import pytest

from custom_helpers import I, both

N = 1500  # two full chunks of 512 and a tail


def specials(rng, lo=-5.0, hi=5.0, n=N):
    x = rng.uniform(lo, hi, n)
    for c in range(0, n, 512):  # the same specials in every chunk
        x[c + 1], x[c + 2], x[c + 3], x[c + 4], x[c + 5] = np.nan, np.inf, -np.inf, 0.0, -0.0
    return x


BINARY = {
    "fmod": lambda L, a, b: L.fmod(a, b),
    "remainder": lambda L, a, b: L.remainder(a, b),
    "floor_divide": lambda L, a, b: L.floor_divide(a, b),
    "div floor": lambda L, a, b: L.div(a, b, rounding_mode="floor"),
    "atan2": lambda L, a, b: L.atan2(a, b),
    "hypot": lambda L, a, b: L.hypot(a, b),
    "pow": lambda L, a, b: L.pow(L.abs(a), b),
    "logaddexp": lambda L, a, b: L.logaddexp(a, b),
    "logaddexp2": lambda L, a, b: L.logaddexp2(a, b),
    "xlogy": lambda L, a, b: L.xlogy(a, L.abs(b)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_chunks(rng, name, dtype):
    f = BINARY[name]
    a, b = specials(rng), specials(rng, -3, 3)
    b[700:710] = a[700:710]  # equal operands (logaddexp of equal infinities, exact multiples)
    b[720:730] = 0.0
    A, B = I(a, dtype), I(b, dtype)
    both(lambda L, x, y: f(L, x, y), A, B, what=name)
    both(lambda L, x, y: f(L, x, y), A, I(np.array(1.75), dtype), what=f"{name} scalar other")
    both(lambda L, x, y: f(L, x, y), I(np.array(-2.5), dtype), B, what=f"{name} scalar self")
    both(lambda L, x, y: f(L, x, y), I(a.reshape(30, 50).T, dtype), I(b[:50], dtype),
         what=f"{name} strided")


@pytest.mark.parametrize("name", ["fmod", "remainder", "atan2", "hypot"])
def test_binary_chunks_inplace_and_out(rng, name):
    a, b = I(specials(rng), "float32"), I(specials(rng, -3, 3), "float32")
    both(lambda L, x, y: getattr(x.clone(), name + "_")(y), a, b, what=f"{name}_")
    both(lambda L, x, y: getattr(L, name)(x, y, out=L.empty(0)), a, b, what=f"{name} out=")


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -0.5, -1, -2, 1.5])
def test_pow_small_exponents(rng, exponent):
    """The exponents PyTorch computes with multiplies and roots when given as a Scalar (a 0-dim
    tensor takes the general pow: pow(-inf, 0.5) is inf, sqrt(-inf) NaN)."""
    x = I(specials(rng), "float32")
    both(lambda L, x: L.pow(x, exponent), x, what=f"pow {exponent}")
    both(lambda L, x: x ** L.tensor(float(exponent)), x, what=f"pow 0-dim {exponent}")
    both(lambda L, x: L.pow(x, exponent), I(specials(rng), "float64"), what=f"f64 {exponent}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_logit_erfinv_sinc_chunks(rng, dtype):
    u = rng.uniform(0, 1, N)
    u[::97] = 0.0
    u[5::97] = 1.0
    u[7::211] = np.nan
    both(lambda L, x: L.logit(x), I(u, dtype), what="logit")
    both(lambda L, x: L.logit(x, 0.1), I(u, dtype), what="logit eps")
    # (eps > 1/2 is left out: torch's vectorized loop clamps to 1 - eps, its scalar tail to eps)
    v = rng.uniform(-1, 1, N)
    v[::101], v[3::101], v[9::101] = 1.0, -1.0, 0.999999
    v[11::211], v[13::211], v[17::211] = np.nan, 1.5, -0.0
    both(lambda L, x: L.erfinv(x), I(v, dtype), what="erfinv")
    both(lambda L, x: x.clone().erfinv_(), I(v, dtype), what="erfinv_")
    s = specials(rng, -50, 50)
    s[100:110] = np.arange(-5, 5)  # the zeros of sin(pi x), and sinc(0) = 1
    both(lambda L, x: L.sinc(x), I(s, dtype), what="sinc")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("act", ["elu", "selu", "celu"])
def test_elu_chunks_skip_positive(rng, act, dtype):
    """Chunks with no value <= 0 skip expm1; mixed chunks and NaN still take it."""
    x = rng.uniform(0.1, 3, N)
    x[600:620] = -rng.uniform(0, 3, 20)  # only the second chunk has negatives
    x[1400] = np.nan
    x[1401] = -0.0
    import torch.nn.functional  # noqa: F401 (the functional namespace below)
    both(lambda L, t: getattr(L.nn.functional, act)(t), I(x, dtype), what=act)
    both(lambda L, t: getattr(L.nn.functional, act)(t.clone(), inplace=True), I(x, dtype),
         what=f"{act} inplace")
