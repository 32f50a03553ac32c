"""Reductions folded in vector lanes (Note [Lane reductions]): amax/amin, prod and vector norms on
rows long enough for the vector loop and its tail, with NaN, infinities and signed zeros placed
in both, against torch in every floating dtype; amax/amin over leading dims (whole columns) and
max/min with indices (Note [Two-pass argmax])."""
import numpy as np
import pytest

from custom_helpers import I, both

DTYPES = ("float32", "float64", "bfloat16", "float16")


def rows(rng, dtype, scale=1.0):
    """[6, 203] values: row 0 plain, 1 NaN in the vector part, 2 NaN in the tail, 3 +-inf,
    4 signed zeros and a NaN at 0, 5 all equal."""
    x = rng.uniform(-1, 1, (6, 203)) * scale
    x[1, 37] = np.nan
    x[2, 201] = np.nan
    x[3, 5], x[3, 150] = np.inf, -np.inf
    x[4, ::2] = 0.0
    x[4, 1::2] = -0.0
    x[4, 0] = np.nan
    x[5] = 0.25
    return I(x, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_amax_amin(rng, dtype):
    x = rows(rng, dtype)
    for dim in (1, 0, (0, 1), -1):
        both(lambda L, x: x.amax(dim), x, what=f"amax {dim}")
        both(lambda L, x: x.amin(dim), x, what=f"amin {dim}")
    both(lambda L, x: x.max(), x)
    both(lambda L, x: x.min(), x)
    both(lambda L, x: x[:, :190].amax(1), x, what="no NaN in the tail")


@pytest.mark.parametrize("dtype", DTYPES)
def test_prod(rng, dtype):
    # Values near 1 keep the 203-term products finite.
    x = I(1 + 0.01 * rng.uniform(-1, 1, (6, 203)), dtype)
    tol = {"rtol": 2e-2, "atol": 0} if dtype in ("bfloat16", "float16") else {}
    both(lambda L, x: x.prod(1), x, **tol)
    both(lambda L, x: x.prod(0), x, **tol)
    both(lambda L, x: x.prod(), x, **tol)
    both(lambda L, x: x.prod(1), rows(rng, dtype, 1.5), what="with specials", **tol)


@pytest.mark.parametrize("dtype", DTYPES + ("int32", "int64", "uint8", "bool"))
def test_prod_over_leading_dims(rng, dtype):
    """prod over the leading dims of a contiguous tensor folds whole columns (no transposed
    copy): more than one column block, more than 1024 rows (row chunks joined in order), keepdim,
    two kept dims, NaN and infinities in columns, integer (int64 results) and bool columns."""
    floating = dtype in DTYPES
    x = 1 + 0.01 * rng.uniform(-1, 1, (1100, 530)) if floating else rng.integers(-2, 3, (1100, 530))
    if floating:
        x[5, 3], x[1099, 529] = np.nan, np.nan
        x[2, 9], x[4, 10] = np.inf, -np.inf
        x[7, 11] = 0.0
    if dtype == "uint8":
        x = np.abs(x)
    vals = x if dtype != "bool" else x > -2
    # 1100-term products of values within 1% of 1: float rounding grows with the row count
    tol = {"rtol": 5e-2 if dtype in ("bfloat16", "float16") else 2e-5, "atol": 0}
    small = I(vals[:37], dtype)
    both(lambda L, t: t.prod(0), I(vals, dtype) if floating else small, what="prod(0)", **tol)
    both(lambda L, t: t.prod(0, keepdim=True), small, what="prod(0, keepdim)", **tol)
    both(lambda L, t: t.prod(0), I(vals[:36].reshape(2, 18, 530), dtype), what="3-d", **tol)
    both(lambda L, t: t.prod(1), I(vals[:36].reshape(2, 18, 530), dtype), what="middle dim",
         **tol)
    both(lambda L, t: t.prod(0), I(vals[:1], dtype), what="one row", **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_norms(rng, dtype):
    x = rows(rng, dtype)
    for ord in (1, 2, float("inf"), float("-inf"), 3, 0):
        for dim in ([1], [0], None):
            both(lambda L, x: L.linalg.vector_norm(x, ord, dim), x, what=f"ord {ord} dim {dim}",
                 rtol=1e-2 if dtype in ("bfloat16", "float16") else 1e-5)


@pytest.mark.parametrize("dtype", DTYPES + ("int32", "uint8", "bool"))
def test_amax_amin_over_leading_dims(rng, dtype):
    """amax/amin over the leading dims of a contiguous tensor fold whole columns (no transposed
    copy): NaN, infinities and signed zeros in columns, more than one column block, keepdim,
    two leading dims, and integer and bool columns."""
    x = rng.uniform(-1, 1, (37, 1100)) * (100 if dtype in ("int32", "uint8") else 1)
    if dtype in DTYPES:
        x[5, 3], x[36, 1099] = np.nan, np.nan
        x[:, 7], x[0, 8], x[3, 8] = -0.0, 0.0, -0.0
        x[2, 9], x[4, 10] = np.inf, -np.inf
        x[:, 11] = -np.inf
    if dtype == "uint8":
        x = np.abs(x)
    vals = x if dtype != "bool" else x > 0
    t = I(vals, dtype)
    for f in ("amax", "amin"):
        both(lambda L, t: getattr(t, f)(0), t, what=f"{f}(0)")
        both(lambda L, t: getattr(t, f)(0, keepdim=True), t, what=f"{f}(0, keepdim)")
        both(lambda L, t: getattr(t, f)((0, 1)), I(vals.reshape(37, 2, 550), dtype),
             what=f"{f} 3-d")
        both(lambda L, t: getattr(t, f)(0), I(vals[:1], dtype), what=f"{f} one row")


@pytest.mark.parametrize("dtype", DTYPES + ("int64",))
def test_max_min_with_indices(rng, dtype):
    """max/min(dim) return the first index of the extreme value (Note [Two-pass argmax]): ties,
    NaN (the first NaN wins), signed zeros, the extreme in the last partial chunk, and rows
    shorter than one vector."""
    x = np.round(rng.uniform(-4, 4, (7, 203)))  # many ties
    if dtype != "int64":
        x[1, 37], x[1, 100] = np.nan, np.nan
        x[2, 201] = np.nan
        x[3] = 0.0
        x[3, 1::3] = -0.0
        x[4, 5], x[4, 150] = np.inf, -np.inf
    x[5, 202], x[6, 200] = 9, -9
    for t in (I(x, dtype), I(x[:, :13], dtype), I(x[:, 64:129], dtype)):
        for f in ("max", "min", "argmax", "argmin"):
            both(lambda L, t: getattr(t, f)(1), t, what=f"{f}(1) {tuple(t.t.shape)}")
            both(lambda L, t: getattr(t, f)(0), t, what=f"{f}(0) {tuple(t.t.shape)}")


@pytest.mark.parametrize("dtype", DTYPES + ("bool", "uint8", "int32", "int64"))
def test_all_any_scan_blocks(dtype):
    """all/any stop at the first 256-element block that decides: a lone zero or nonzero at the
    start, in the middle and at the very end of long rows, NaN (nonzero), -0 (zero), empty
    rows, rows along each dim, against torch."""
    n = 3000
    for where in (0, 1500, n - 1):
        ones, zeros = np.ones(n), np.zeros(n)
        ones[where], zeros[where] = 0, 1
        for v in (ones, zeros):
            x = I(v if dtype != "bool" else v > 0, dtype)
            both(lambda L, x: x.all(), x, what=f"all at {where}")
            both(lambda L, x: x.any(), x, what=f"any at {where}")
    if dtype in DTYPES:
        both(lambda L, x: x.all(), I(np.array([np.nan] * 600 + [-0.0]), dtype), what="-0")
        both(lambda L, x: x.any(), I(np.array([-0.0] * 600 + [np.nan]), dtype), what="NaN")
    m = np.random.default_rng(3).uniform(0, 1, (40, 700)) < 0.999
    x = I(m if dtype == "bool" else m.astype(np.float64), dtype)
    for dim in (0, 1, -1):
        both(lambda L, x: x.all(dim), x, what=f"all({dim})")
        both(lambda L, x: x.any(dim), x, what=f"any({dim})")
    both(lambda L, x: x.all(1), I(np.zeros((3, 0)) > 0 if dtype == "bool"
                                 else np.zeros((3, 0)), dtype), what="empty rows")


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_integer_sums_read_the_input(dtype):
    """Integer and bool sums into int64 without a converted copy: a long row in threaded
    chunks (more than 2^17 elements), rows along each dim, negative values and int64
    wrap-around, against torch."""
    rng = np.random.default_rng(8)
    v = rng.integers(-100, 100, 300001)
    if dtype in ("bool", "uint8"):
        v = np.abs(v) % 2 if dtype == "bool" else np.abs(v)
    x = I(v > 0 if dtype == "bool" else v, dtype)
    both(lambda L, x: x.sum(), x, what="long row")
    m = I((v[:300000] > 0 if dtype == "bool" else v[:300000]).reshape(300, 1000), dtype)
    for dim in (0, 1, (0, 1), -1):
        both(lambda L, x: x.sum(dim), m, what=f"sum({dim})")
    both(lambda L, x: x.sum(1, keepdim=True), m, what="keepdim")
    if dtype == "int64":
        big = I(np.array([2 ** 62, 2 ** 62, 2 ** 62, -5]), "int64")
        both(lambda L, x: x.sum(), big, what="wraps like torch")


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_integer_min_max(dtype):
    """Integer and bool min/max/amax/amin from the type's extreme: a long row in threaded chunks
    with the extreme in the last chunk, rows along each dim, the type's own limits, vs torch."""
    rng = np.random.default_rng(9)
    info = np.iinfo(dtype) if dtype != "bool" else None
    v = rng.integers(0, 2, 300001) if dtype == "bool" else rng.integers(-100, 100, 300001)
    if dtype == "uint8":
        v = np.abs(v)
    v[:300000:2] = v[1]  # (mostly one value: the extremes come from the rest)
    if info is not None:
        v[299999], v[300000] = info.min, info.max
    x = I(v.astype(bool) if dtype == "bool" else v, dtype)
    for f in (lambda L, x: x.max(), lambda L, x: x.min(), lambda L, x: x.amax(0),
              lambda L, x: x.amin(0), lambda L, x: x[:1000].reshape(10, 100).amax(1),
              lambda L, x: x[:1000].reshape(10, 100).min(0).values,
              lambda L, x: x[:1000].reshape(10, 100).amin((0, 1), keepdim=True)):
        both(f, x, what=dtype)


def test_bfloat16_conversions_round_like_torch():
    """Note [16-bit float loops]: float32 <-> bfloat16 spans (vectorized bit loops) give torch's
    bits: round to nearest even at ties, overflow to infinity, subnormals, signed zeros and
    infinities, NaN (as a NaN), over random bit patterns and lengths with tails."""
    import torch

    import retorch
    rng = np.random.default_rng(21)
    bits = rng.integers(0, 2 ** 32, 100003, dtype=np.uint64).astype(np.uint32)
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
                        0x7F7FFFFF, 0x00000001, 0x807FFFFF, 0x3F808000, 0x3F818000,
                        0x3F80FFFF, 0x00008000, 0x7F7F8000], dtype=np.uint32)
    bits[:len(special)] = special
    x = bits.view(np.float32)
    for n in (len(x), 17, 5):
        got = retorch.from_numpy(x[:n].copy()).to(retorch.bfloat16).to(retorch.float32).numpy()
        want = torch.from_numpy(x[:n].copy()).bfloat16().float().numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))


def test_bool_loops_through_bytes():
    """Conversions to and from bool, ~ and logical_not of bool run over the bytes (GCC
    vectorizes no loop over bool): NaN, -0, subnormal, infinities and fractions to bool, bool to
    every dtype, long spans and tails, against torch."""
    import torch

    import retorch
    v = np.random.default_rng(12).standard_normal(1037)
    v[:8] = [np.nan, -0.0, 0.0, 1e-310, np.inf, -np.inf, 0.25, -3.0]
    for dt in ("float32", "float64", "bfloat16", "int32", "int8", "uint8"):
        src = v * 3 if dt.startswith("int") or dt == "uint8" else v
        if dt.startswith("int") or dt == "uint8":
            src = np.nan_to_num(src, nan=0, posinf=5, neginf=-5).astype(np.int64)
            src = np.abs(src) if dt == "uint8" else src
        x = I(src, dt)
        both(lambda L, x: x.to(L.bool), x, what=f"{dt} -> bool")
    m = I(v > 0, "bool")
    for dt in ("float32", "float64", "bfloat16", "int64", "int32", "uint8", "int8"):
        both(lambda L, m: m.to(getattr(L, dt)), m, what=f"bool -> {dt}")
    both(lambda L, m: ~m, m)
    both(lambda L, m: L.logical_not(m), m)
    both(lambda L, m: L.logical_not(m.t()), I(np.reshape(v[:1036] > 0, (28, 37)), "bool"))
