"""Oracle tests for the GGUF block-quantized weight ops: quantize_blocks and dequantize_blocks
against gguf-py's reference (byte/bit exact), quantized_linear against torch on the dequantized
weight."""
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as GT
from gguf import quants

import retorch
import retorch.backends.cpu
import retorch.gguf

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_quantize_blocks_matches_gguf": ["quantize_blocks"],
    "test_quantize_blocks_input_dtypes": ["quantize_blocks"],
    "test_dequantize_blocks_matches_gguf": ["dequantize_blocks"],
    "test_quantized_linear_values": ["quantized_linear"],
    "test_quantized_linear_layouts": ["quantized_linear"],
    "test_quant_errors": ["quantize_blocks", "dequantize_blocks", "quantized_linear"],
    "test_q4_0_interleaved_rows": ["dequantize_blocks", "quantized_linear"],
}

# kGemmRows in QuantOps.cpp: from this many input rows quantized_linear dequantizes the weight
# and runs SGEMM (float32 exact); below it the input is rounded to 8 bits (Note [Activation
# quantization]).
GEMM_ROWS = 16

BLOCK = {GT.Q8_0: 32, GT.Q4_0: 32, GT.Q4_K: 256, GT.Q6_K: 256, GT.F32: 1, GT.F16: 1, GT.BF16: 1}
BYTES = {GT.Q8_0: 34, GT.Q4_0: 18, GT.Q4_K: 144, GT.Q6_K: 210, GT.F32: 4, GT.F16: 2, GT.BF16: 2}


def rt(a):
    return retorch.from_numpy(np.ascontiguousarray(a))


def edge_rows(rng, k):
    """Rows that probe the quantizers' corners, k values each."""
    rows = [np.zeros(k), np.full(k, 1e30), np.full(k, -3e38)]
    r = rng.standard_normal(k)
    r[5] = -10.0                       # the largest magnitude is negative (Q4_0 keeps its sign)
    rows.append(r)
    t = rng.standard_normal(k)
    t[3], t[9] = 4.0, -4.0             # a tie on |max|: the first one wins
    rows.append(t)
    rows.append(rng.standard_normal(k) * 1e-6)           # fp16 scale near its subnormals
    rows.append(rng.standard_normal(k) * 1e5)            # fp16 scale near its largest values
    rows.append(np.round(rng.standard_normal(k) * 8) / 8)  # exact ties of the rounding
    u = rng.standard_normal(k)
    u[::7] = 0.0
    rows.append(u)
    return np.stack(rows).astype(np.float32)


def test_quantize_blocks_matches_gguf(rng):
    for qt in (GT.Q8_0, GT.Q4_0, GT.F16, GT.BF16, GT.F32):
        for k in (32, 256):
            x = np.concatenate([rng.standard_normal((7, k)) * rng.uniform(0.01, 100, (7, 1)),
                                edge_rows(rng, k)]).astype(np.float32)
            with np.errstate(all="ignore"):
                want = quants.quantize(x, qt).view(np.uint8).reshape(x.shape[0], -1)
            got = retorch.quantize_blocks(rt(x), int(qt)).numpy()
            assert got.dtype == np.uint8 and got.shape == want.shape, (qt, got.shape, want.shape)
            bad = np.argwhere(got != want)
            assert bad.size == 0, f"{qt.name} k={k}: bytes differ at (row, byte) {bad[:5].tolist()}"
        # A 1-D input is one row and gives 1-D bytes.
        v = rng.standard_normal(64).astype(np.float32)
        got = retorch.quantize_blocks(rt(v), int(qt)).numpy()
        assert np.array_equal(got, quants.quantize(v, qt).view(np.uint8).reshape(-1)), qt.name


def test_quantize_blocks_input_dtypes(rng):
    # Other floating inputs are converted to float32 first (exactly, for float16/bfloat16).
    x = rng.standard_normal((3, 64)).astype(np.float32)
    for dt in (retorch.float64, retorch.float16, retorch.bfloat16):
        t = rt(x).to(dt)
        x32 = t.float().numpy()
        for qt in (GT.Q8_0, GT.Q4_0):
            want = quants.quantize(x32, qt)
            assert np.array_equal(retorch.quantize_blocks(t, int(qt)).numpy(), want), (dt, qt)
    # A non-contiguous (transposed) input.
    xt = rng.standard_normal((64, 3)).astype(np.float32)
    got = retorch.quantize_blocks(rt(xt).t(), int(GT.Q8_0)).numpy()
    assert np.array_equal(got, quants.quantize(np.ascontiguousarray(xt.T), GT.Q8_0))
    # Empty inputs.
    assert tuple(retorch.quantize_blocks(retorch.zeros(0, 64), int(GT.Q4_0)).shape) == (0, 36)


def random_blocks(rng, qt, rows, cols):
    """Random bytes for `rows` rows of `cols` values, with every fp16 scale field set to a sane
    value (random bits would make NaN/inf scales); gguf-py cannot quantize to the K-quants."""
    nb = cols // BLOCK[qt]
    b = rng.integers(0, 256, (rows, nb, BYTES[qt]), dtype=np.uint8)

    def fp16(shape, lo, hi):
        return (rng.uniform(lo, hi, shape) * rng.choice([-1, 1], shape)).astype(np.float16)

    if qt in (GT.Q8_0, GT.Q4_0):
        b[..., 0:2] = fp16((rows, nb), 1e-3, 2).view(np.uint8).reshape(rows, nb, 2)
    elif qt == GT.Q4_K:  # d, dmin, then scales and nibbles
        b[..., 0:2] = fp16((rows, nb), 1e-3, 1).view(np.uint8).reshape(rows, nb, 2)
        b[..., 2:4] = np.abs(fp16((rows, nb), 1e-3, 1)).view(np.uint8).reshape(rows, nb, 2)
    elif qt == GT.Q6_K:  # ql, qh, int8 scales, d last
        b[..., 208:210] = fp16((rows, nb), 1e-3, 1).view(np.uint8).reshape(rows, nb, 2)
    elif qt in (GT.F16, GT.BF16, GT.F32):
        dt = {GT.F16: np.float16, GT.F32: np.float32, GT.BF16: np.float32}[qt]
        v = rng.standard_normal((rows, cols)).astype(dt)
        if qt == GT.BF16:
            v = (v.view(np.uint32) >> 16).astype(np.uint16)
        return v.view(np.uint8).reshape(rows, -1)
    return b.reshape(rows, -1)


def dequant_ref(qt, blocks):
    if qt == GT.BF16:
        return (blocks.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return quants.dequantize(blocks, qt).astype(np.float32, copy=False)


def test_dequantize_blocks_matches_gguf(rng):
    for qt in (GT.Q8_0, GT.Q4_0, GT.Q4_K, GT.Q6_K, GT.F16, GT.BF16, GT.F32):
        for rows, cols in ((5, 256), (1, 512), (3, 768)):
            b = random_blocks(rng, qt, rows, cols)
            want = dequant_ref(qt, b)
            got = retorch.dequantize_blocks(rt(b), int(qt), cols).numpy()
            assert got.shape == (rows, cols) and got.dtype == np.float32
            bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
            assert bad.size == 0, (f"{qt.name} {rows}x{cols}: differs at {bad[:5].tolist()}: "
                                   f"{got[tuple(bad[0])]} vs {want[tuple(bad[0])]}")
        # 1-D bytes are one row.
        b = random_blocks(rng, qt, 1, 256)[0]
        got = retorch.dequantize_blocks(rt(b), int(qt), 256).numpy()
        assert got.shape == (256,) and np.array_equal(got, dequant_ref(qt, b[None])[0]), qt.name
    # Every 16-bit pattern (NaNs with their payloads, infinities, subnormals) of F16 and BF16.
    allbits = np.arange(65536, dtype=np.uint16).view(np.uint8).reshape(1, -1)
    for qt in (GT.F16, GT.BF16):
        got = retorch.dequantize_blocks(rt(allbits), int(qt), 65536).numpy()
        assert np.array_equal(got.view(np.uint32), dequant_ref(qt, allbits).view(np.uint32)), qt
    # Quantize -> dequantize round trip of the two quantizable formats.
    x = rng.standard_normal((4, 128)).astype(np.float32)
    for qt in (GT.Q8_0, GT.Q4_0):
        q = retorch.quantize_blocks(rt(x), int(qt))
        assert np.array_equal(retorch.dequantize_blocks(q, int(qt), 128).numpy(),
                              quants.dequantize(quants.quantize(x, qt), qt))


def linear_ref(x, w, bias):
    """x @ w.T (+ bias) in float64 by torch, and sum |x| |w| (the float32 rounding scale)."""
    xt, wt = torch.from_numpy(x.astype(np.float64)), torch.from_numpy(w.astype(np.float64))
    y = xt @ wt.T
    if bias is not None:
        y = y + torch.from_numpy(bias.astype(np.float64))
    return y.numpy(), (xt.abs() @ wt.abs().T).numpy()


def act_bound(x, w, block):
    """The largest change of x @ w.T from rounding each input block of `block` values to 8 bits
    (see Note [Activation quantization]): every value moves by at most amax(its block) / 254,
    so an output moves by at most sum over blocks of amax / 254 * sum |w| over that block."""
    m, k = x.shape
    amax = np.abs(x.astype(np.float64)).reshape(m, k // block, block).max(-1)      # [M, B]
    wsum = np.abs(w.astype(np.float64)).reshape(w.shape[0], k // block, block).sum(-1)  # [N, B]
    return (amax / 254) @ wsum.T


def interleave_q4_0(b):
    """Q4_0 rows [N, row_bytes] in retorch's Q4_0x16 layout (Note [Q4_0 in groups of 16 rows]):
    per group of 16 rows and block, the 16 fp16 scales, then for v < 4 the 4 bytes qs[4v:4v+4]
    of each of the 16 rows."""
    n, rb = b.shape
    blocks = b.reshape(n // 16, 16, rb // 18, 18).transpose(0, 2, 1, 3)  # [group, block, row, 18]
    scales = blocks[..., :2].reshape(n // 16, rb // 18, 32)
    pieces = blocks[..., 2:].reshape(n // 16, rb // 18, 16, 4, 4).transpose(0, 1, 3, 2, 4)
    return np.concatenate([scales, pieces.reshape(n // 16, rb // 18, 256)], -1).reshape(n, rb)


def check_linear(rng, qt, m, n, k, batch=(), with_bias=True, interleaved=False):
    wb = random_blocks(rng, qt, n, k)
    w = dequant_ref(qt, wb)
    x = rng.standard_normal((*batch, m, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32) if with_bias else None
    wq, qid = (interleave_q4_0(wb), retorch.gguf.Q4_0x16) if interleaved else (wb, int(qt))
    got = retorch.quantized_linear(rt(x), rt(wq), qid, k,
                                   rt(bias) if with_bias else None).numpy()
    assert got.shape == (*batch, m, n) and got.dtype == np.float32
    x2 = x.reshape(-1, k)
    want, scale = linear_ref(x2, w, bias)
    # float32 accumulation of k products: |error| <= k * 2^-24 * sum |x w| (a few ulps spare).
    tol = 1.01 * k * 2.0 ** -24 * scale + 1e-6
    # Few input rows of a block-quantized weight take the 8-bit integer path, whose input
    # rounding adds act_bound; from GEMM_ROWS rows the weight is dequantized for SGEMM.
    if qt not in (GT.F32, GT.F16, GT.BF16) and x2.shape[0] < GEMM_ROWS:
        tol = tol + 1.001 * act_bound(x2, w, 32 if qt in (GT.Q8_0, GT.Q4_0) else 256)
    err = np.abs(got.reshape(-1, n) - want)
    worst = np.unravel_index(np.argmax(err - tol), err.shape)
    assert (err <= tol).all(), (f"{qt.name} m={m} n={n} k={k} batch={batch}: error "
                                f"{err[worst]:.3g} > tol {tol[worst]:.3g} at {worst}")
    return got


def test_quantized_linear_values(rng):
    for qt in (GT.Q8_0, GT.Q4_0, GT.Q4_K, GT.Q6_K, GT.F16, GT.BF16, GT.F32):
        k = 512
        for m in (1, 3, 15):             # decode-sized inputs: the integer path
            check_linear(rng, qt, m, 37, k)
        check_linear(rng, qt, 64, 131, k)  # prefill-sized: dequantized tiles + SGEMM (3 tiles)
        check_linear(rng, qt, 16, 5, k, with_bias=False)  # the first GEMM-path size
        check_linear(rng, qt, 1, 1, k, with_bias=False)
        check_linear(rng, qt, 2, 9, k, batch=(4, 3))     # batch dims: 24 rows -> GEMM path
        check_linear(rng, qt, 1, 9, k, batch=(3,))       # 3 rows -> integer path
        if qt in (GT.F16, GT.BF16, GT.F32):
            check_linear(rng, qt, 1, 7, 45)  # one row, 45 columns: the widening dot's tail
        if qt in (GT.Q8_0, GT.Q4_0):  # rows in fours and two more; 25 blocks: groups and a tail
            check_linear(rng, qt, 1, 6, 800)


def test_quantized_linear_layouts(rng):
    # Non-contiguous input and bias, and a weight of 4096 columns (several blocks per row).
    qt, n, k = GT.Q4_0, 16, 4096
    wb = random_blocks(rng, qt, n, k)
    w = dequant_ref(qt, wb)
    x = rng.standard_normal((k, 2)).astype(np.float32)
    b = rng.standard_normal(2 * n).astype(np.float32)
    got = retorch.quantized_linear(rt(x).t(), rt(wb), int(qt), k, rt(b)[::2]).numpy()
    want, scale = linear_ref(np.ascontiguousarray(x.T), w, b[::2])
    tol = 1.01 * k * 2.0 ** -24 * scale + 1.001 * act_bound(np.ascontiguousarray(x.T), w, 32)
    assert (np.abs(got - want) <= tol).all()
    # Empty input rows and zero output features.
    assert tuple(retorch.quantized_linear(retorch.zeros(0, k), rt(wb), int(qt), k).shape) == (0, n)
    assert tuple(retorch.quantized_linear(retorch.zeros(3, k), rt(wb[:0]), int(qt), k).shape) == (3, 0)
    # A zero input row gives exactly the bias (its 8-bit scale is 0, nothing divides by it).
    z = retorch.quantized_linear(retorch.zeros(1, k), rt(wb), int(qt), k, rt(b[:n])).numpy()
    assert np.array_equal(z[0], b[:n])
    # A NaN input poisons its row, as a float product would.
    xn = rng.standard_normal((2, k)).astype(np.float32)
    xn[1, 7] = np.nan
    y = retorch.quantized_linear(rt(xn), rt(wb), int(qt), k).numpy()
    assert np.isfinite(y[0]).all() and np.isnan(y[1]).all()


@pytest.mark.parametrize("isa", ["AVX512", "AVX2", "DEFAULT"])
def test_q4_0_interleaved_rows(rng, isa):
    # Q4_0 rows interleaved 16 at a time hold the same values and give the same products as the
    # Q4_0 rows, through the AVX-512 group kernel and through the other instruction sets' path.
    x16 = retorch.gguf.Q4_0x16
    before = retorch.backends.cpu.get_cpu_capability()
    retorch.backends.cpu.set_cpu_capability(isa)
    try:
        for n, k in ((16, 32), (48, 800), (32, 4096)):
            wb = random_blocks(rng, GT.Q4_0, n, k)
            got = retorch.dequantize_blocks(rt(interleave_q4_0(wb)), x16, k).numpy()
            assert np.array_equal(got, dequant_ref(GT.Q4_0, wb)), (n, k)
        # 1-3 input rows, a group of four, four and some: the kernel's row counts; 20 and a
        # batch of 24 rows take the dequantized-tile GEMM path.
        for m in (1, 2, 3, 4, 5, 7, 15, 20):
            check_linear(rng, GT.Q4_0, m, 48, 800, interleaved=True)
        check_linear(rng, GT.Q4_0, 2, 16, 256, batch=(4, 3), interleaved=True, with_bias=False)
        # Each input row's result is the one it gets alone, in any batch below the GEMM rows.
        wb = interleave_q4_0(random_blocks(rng, GT.Q4_0, 64, 256))
        x = rng.standard_normal((6, 256)).astype(np.float32)
        many = retorch.quantized_linear(rt(x), rt(wb), x16, 256).numpy()
        for i in range(6):
            one = retorch.quantized_linear(rt(x[i:i + 1]), rt(wb), x16, 256).numpy()
            assert np.array_equal(one[0], many[i]), i
        if isa == "AVX512":  # the AVX2 group kernel sums the same integers: the same bits
            retorch.backends.cpu.set_cpu_capability("AVX2")
            assert np.array_equal(retorch.quantized_linear(rt(x), rt(wb), x16, 256).numpy(), many)
    finally:
        retorch.backends.cpu.set_cpu_capability(before)


def raises(match, fn, *args):
    with pytest.raises((ValueError, TypeError, RuntimeError), match=match):
        fn(*args)


def test_quant_errors(rng):
    x = rt(rng.standard_normal((2, 64)).astype(np.float32))
    q8 = retorch.quantize_blocks(x, int(GT.Q8_0))  # [2, 68]
    ql = retorch.quantized_linear
    # quantize_blocks
    raises(r"quantize_blocks: no quantizer for Q4_K", retorch.quantize_blocks, x, int(GT.Q4_K))
    raises(r"quantize_blocks: unsupported qtype 3 \(Q4_1\)", retorch.quantize_blocks, x, 3)
    raises(r"quantize_blocks: unsupported qtype 99", retorch.quantize_blocks, x, 99)
    raises(r"quantize_blocks: row length 48 is not a multiple of the Q8_0 block size 32",
           retorch.quantize_blocks, retorch.zeros(2, 48), int(GT.Q8_0))
    raises(r"quantize_blocks: expected a floating-point input, got int64",
           retorch.quantize_blocks, retorch.zeros(2, 64, dtype=retorch.int64), int(GT.Q8_0))
    raises(r"quantize_blocks: expected a 1-D \[K\] or 2-D \[N, K\] input, got shape \[2, 2, 32\]",
           retorch.quantize_blocks, retorch.zeros(2, 2, 32), int(GT.Q8_0))
    # dequantize_blocks
    raises(r"dequantize_blocks: 96 Q8_0 values take 102 bytes per row, but the input has shape "
           r"\[2, 68\]", retorch.dequantize_blocks, q8, int(GT.Q8_0), 96)
    raises(r"dequantize_blocks: cols 40 is not a non-negative multiple of the Q8_0 block size 32",
           retorch.dequantize_blocks, q8, int(GT.Q8_0), 40)
    raises(r"dequantize_blocks: expected uint8 blocks, got float32", retorch.dequantize_blocks,
           x, int(GT.Q8_0), 64)
    raises(r"dequantize_blocks: unsupported qtype 13 \(Q5_K\)", retorch.dequantize_blocks, q8,
           13, 64)
    # quantized_linear
    raises(r"quantized_linear: weight must be uint8 \(packed Q8_0 rows\), got float32", ql, x, x,
           int(GT.Q8_0), 64)
    raises(r"quantized_linear: weight must be 2-D \[out_features, row_bytes\], got shape \[68\]",
           ql, x, q8[0], int(GT.Q8_0), 64)
    raises(r"quantized_linear: in_features 48 is not a non-negative multiple of the Q8_0 block "
           r"size 32", ql, x, q8, int(GT.Q8_0), 48)
    raises(r"quantized_linear: 64 Q4_0 values take 36 bytes per row, but the weight has shape "
           r"\[2, 68\]", ql, x, q8, int(GT.Q4_0), 64)
    raises(r"quantized_linear: input shape \[2, 32\] does not end in in_features 64", ql,
           retorch.zeros(2, 32), q8, int(GT.Q8_0), 64)
    raises(r"quantized_linear: input must be float32, got float64", ql, x.double(), q8,
           int(GT.Q8_0), 64)
    raises(r"quantized_linear: bias shape \[3\] does not match out_features 2", ql, x, q8,
           int(GT.Q8_0), 64, retorch.zeros(3))
    raises(r"quantized_linear: bias must be float32, got float64", ql, x, q8, int(GT.Q8_0), 64,
           retorch.zeros(2, dtype=retorch.float64))
    raises(r"quantized_linear: unsupported qtype 3 \(Q4_1\); supported: F32 \(0\)", ql, x, q8, 3,
           64)
    raises(r"quantized_linear: in_features 64 is not a non-negative multiple of the Q4_K block "
           r"size 256", ql, x, q8, int(GT.Q4_K), 64)
    # Q4_0x16: whole groups of 16 rows, and a layout rather than a quantizer.
    q4 = rt(np.zeros((24, 36), np.uint8))
    raises(r"quantized_linear: Q4_0x16 blocks come in groups of 16 rows, but the weight has 24 "
           r"rows \(shape \[24, 36\]\)", ql, x, q4, retorch.gguf.Q4_0x16, 64)
    raises(r"dequantize_blocks: Q4_0x16 blocks come in groups of 16 rows, but the weight has 24 "
           r"rows", retorch.dequantize_blocks, q4, retorch.gguf.Q4_0x16, 64)
    raises(r"quantize_blocks: no quantizer for Q4_0x16", retorch.quantize_blocks, x,
           retorch.gguf.Q4_0x16)


def test_bfloat16_linear_with_non_finite_inputs(rng):
    # Prefill-sized inputs of a bfloat16 weight may run as two bfloat16 matmuls (Note [Split
    # bfloat16 activations]); an inf or NaN input must give what the float32 product gives.
    n, k = 8, 64
    wb = random_blocks(rng, GT.BF16, n, k)
    w = dequant_ref(GT.BF16, wb)
    x = rng.standard_normal((20, k)).astype(np.float32)
    x[3, 5], x[7, 0], x[7, 1], x[11, 9] = np.inf, np.inf, -np.inf, np.nan
    got = retorch.quantized_linear(rt(x), rt(wb), int(GT.BF16), k).numpy()
    want = (torch.from_numpy(x).double() @ torch.from_numpy(w).double().T).numpy()
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])  # inf and NaN where torch has them
    x[~np.isfinite(x)] = 0
    scale = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T
    # Within float32 accumulation's k * 2^-24 of sum |x w| (the split's 2^-18 at k = 64).
    assert (np.abs(got[finite] - want[finite]) <= (1.01 * k * 2.0 ** -24 * scale + 1e-6)[finite]).all()
