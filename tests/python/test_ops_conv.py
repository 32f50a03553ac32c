"""Oracle tests for convolution, pooling and resampling: values, gradients, gradcheck and
gradgradcheck against PyTorch 1.13, over dtypes, layouts, option grids and error cases."""
import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import retorch
from custom_helpers import I, P, aten, both, gradcheck, gradgradcheck, grads
from oracle import FLOATS, make_pair

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_convolution": ["convolution"],
    "test_conv1d_conv2d": ["conv1d", "conv2d"],
    "test_conv_padding_modes": ["conv1d.padding", "conv2d.padding"],
    "test_conv_transpose": ["conv_transpose1d", "conv_transpose2d.input"],
    "test_conv_backward_weight": ["_convolution_backward_weight"],
    "test_max_pool": ["max_pool1d", "max_pool2d", "max_pool2d_with_indices"],
    "test_max_pool_backward": ["max_pool2d_with_indices_backward"],
    "test_avg_pool2d": ["avg_pool2d", "avg_pool2d_backward"],
    "test_adaptive_avg_pool2d": ["adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward"],
    "test_adaptive_max_pool2d": ["adaptive_max_pool2d", "adaptive_max_pool2d_backward"],
    "test_im2col_col2im": ["im2col", "col2im"],
    "test_pixel_shuffle": ["pixel_shuffle", "pixel_unshuffle"],
    "test_upsample_nearest2d": ["upsample_nearest2d", "upsample_nearest2d_backward"],
    "test_upsample_bilinear2d": ["upsample_bilinear2d", "upsample_bilinear2d_backward"],
    "test_constant_pad": ["constant_pad_nd"],
    "test_mode_pads": ["reflection_pad1d", "reflection_pad2d", "replication_pad1d",
                       "replication_pad2d", "pad"],
}

CONV_TOL = {"rtol": 1e-4, "atol": 1e-4}


def is_torch(L):
    """L is torch (or both()'s float32 stand-in for it)."""
    return L.__name__ == "torch"


def nnf(L):
    """torch.nn.functional for torch (where avg/adaptive pools live), retorch itself."""
    return F if is_torch(L) else retorch


def fn_of(L, torch_fn, retorch_name):
    """torch's functional form for torch, retorch.<name> for retorch."""
    return torch_fn if is_torch(L) else getattr(retorch, retorch_name)


def cw(L, w):
    """A conv weight as passed to L: torch 1.13 fails on some strided weights ("view size is not
    compatible with input tensor's size and stride"), so torch gets a contiguous copy while
    retorch gets the strided one."""
    return w.contiguous() if is_torch(L) else w


def transpose_fn(L, torch_fn, retorch_name, dt):
    """fn_of for conv_transpose: torch 1.13 sends bfloat16 conv_transpose to oneDNN on CPUs with
    AVX-512 BF16, which refuses valid shapes ("expected input ... to have 3 channels"), so there
    torch's reference is computed in float32 and rounded to bfloat16 (what retorch's kernel does:
    float32 sums, one rounding)."""
    if not is_torch(L) or dt != "bfloat16":
        return fn_of(L, torch_fn, retorch_name)
    return lambda x, w, b, *a: torch_fn(x.float(), w.float(), b.float(), *a).bfloat16()


def low_tol(dt):
    """Conv tolerances: torch's bfloat16 CPU conv rounds partial sums to bfloat16, so results
    that cancel to small values differ from a float32 computation by several bfloat16 ulps."""
    return {"rtol": 2e-2, "atol": 3e-2} if dt in ("bfloat16", "float16") else CONV_TOL


# ---------------------------------------------------------------- convolution

CONV2D_GRID = [
    # (N, C, H, W), (O, C/g, kh, kw), stride, padding, dilation, groups
    ((2, 3, 7, 6), (4, 3, 3, 3), 1, 0, 1, 1),
    ((2, 3, 7, 6), (4, 3, 3, 2), (2, 1), (1, 2), 1, 1),
    ((1, 4, 8, 8), (6, 2, 3, 3), 2, 1, (2, 1), 2),
    ((2, 6, 5, 5), (6, 1, 3, 3), 1, 1, 1, 6),
    ((2, 3, 5, 4), (5, 3, 1, 1), 1, 0, 1, 1),
    ((2, 3, 5, 4), (5, 3, 1, 1), 2, 1, 1, 1),
    ((0, 3, 5, 5), (2, 3, 3, 3), 1, 0, 1, 1),
    ((1, 2, 4, 4), (3, 2, 4, 4), 3, 2, 1, 1),
]


def test_convolution(rng):
    # torch 1.13 fails on some non-contiguous 1x1 weights ("view size is not compatible"):
    # it gets a contiguous copy, retorch the strided weight.
    conv = lambda L, x, w, b, *a: aten(L, "convolution")(x, cw(L, w), b, *a)  # noqa: E731
    for dt in FLOATS:
        for lay in ("contig", "transposed"):
            for xs, ws, s, p, d, g in CONV2D_GRID:
                s2, p2, d2 = [[v, v] if isinstance(v, int) else list(v) for v in (s, p, d)]
                x, w, b = P(rng, xs, dt, lay), P(rng, ws, dt, lay), P(rng, (ws[0],), dt)
                both(conv, x, w, b, s2, p2, d2, False, [0, 0], g, **low_tol(dt))
                both(conv, x, w, None, s2, p2, d2, False, [0, 0], g, **low_tol(dt))
    # integers: exact sums that wrap like torch's (transposed only for int64 in torch)
    for dt in ("int8", "uint8", "int16", "int32", "int64", "bool"):
        x, w, b = P(rng, (2, 4, 6, 5), dt, "transposed"), P(rng, (3, 2, 3, 3), dt), P(rng, (3,), dt)
        both(conv, x, w, b, [1, 1], [1, 0], [1, 1], False, [0, 0], 2)
        both(conv, x, P(rng, (4, 2, 2, 2), dt), None, [2, 2], [0, 0], [1, 1], True, [0, 0], 1)
    # 1-d and transposed through the primitive
    for dt in ("float32", "float64"):
        x, w = P(rng, (2, 4, 9), dt), P(rng, (6, 2, 3), dt)
        both(conv, x, w, P(rng, (6,), dt), [2], [1], [2], False, [0], 2, **CONV_TOL)
        wt = P(rng, (4, 3, 3), dt)
        both(conv, x, wt, None, [2], [1], [1], True, [1], 1, **CONV_TOL)
        grads(conv, x, w, P(rng, (6,), dt), [2], [1], [2], False, [0], 2)
    # errors: rank, channels, groups, kernel too large, negative padding, bias size, dtypes
    x4, w4 = P(rng, (1, 4, 5, 5)), P(rng, (2, 4, 3, 3))
    both(conv, P(rng, (4, 5, 5)), w4, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
         what="3-d input for 4-d weight")
    both(conv, x4, P(rng, (2, 3, 3, 3)), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
         what="channel mismatch")
    both(conv, x4, P(rng, (3, 2, 3, 3)), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2,
         what="out channels not divisible by groups")
    both(conv, x4, P(rng, (2, 4, 7, 7)), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
         what="kernel larger than padded input")
    both(conv, x4, w4, None, [1, 1], [-1, 0], [1, 1], False, [0, 0], 1, what="negative padding")
    both(conv, x4, w4, None, [0, 1], [0, 0], [1, 1], False, [0, 0], 1, what="zero stride")
    both(conv, x4, w4, None, [1, 1], [0, 0], [0, 1], False, [0, 0], 1, what="zero dilation")
    both(conv, x4, w4, P(rng, (3,)), [1, 1], [0, 0], [1, 1], False, [0, 0], 1, what="bias size")
    both(conv, x4, w4, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 0, what="groups 0")
    both(conv, x4, P(rng, (2, 4, 3, 3), "float64"), None, [1, 1], [0, 0], [1, 1], False, [0, 0],
         1, what="dtype mismatch")
    both(conv, P(rng, (1, 4, 5, 5), "int64"), P(rng, (2, 4, 3, 3), "int64"), None, [1, 1],
         [0, 0], [1, 1], False, [0, 0], 1, what="integer conv")


def test_conv1d_conv2d(rng):
    for dt in FLOATS:
        for lay in ("contig", "transposed"):
            x, w, b = P(rng, (2, 4, 10), dt, lay), P(rng, (6, 2, 3), dt, lay), P(rng, (6,), dt)
            for s, p, d in itertools.product((1, 2), (0, 2), (1, 2)):
                both(lambda L, x, w, b: fn_of(L, F.conv1d, "conv1d")(x, cw(L, w), b, s, p, d,
                                                                   2), x, w, b, **low_tol(dt))
            both(lambda L, x, w: L.conv1d(x, w, None, [1], [1]), P(rng, (3, 10), dt),
                 P(rng, (5, 3, 3), dt), what="unbatched conv1d", **low_tol(dt))
            x, w, b = P(rng, (2, 4, 7, 8), dt, lay), P(rng, (6, 2, 3, 2), dt, lay), P(rng, (6,), dt)
            for s, p, d in [(1, 0, 1), (2, 1, 1), ((1, 2), (2, 0), (2, 1)), (3, 1, 2)]:
                both(lambda L, x, w, b: fn_of(L, F.conv2d, "conv2d")(x, cw(L, w), b, s, p, d,
                                                                   2), x, w, b, **low_tol(dt))
                both(lambda L, x, w: L.conv2d(x, cw(L, w), stride=s, padding=p, dilation=d,
                                              groups=2), x, w, **low_tol(dt))
            both(lambda L, x, w: L.conv2d(x, w), P(rng, (4, 6, 6), dt), P(rng, (3, 4, 3, 3), dt),
                 what="unbatched conv2d", **low_tol(dt))
    # gradients vs torch (float32 on transposed layouts) and float64 gradcheck
    for lay in ("contig", "transposed"):
        grads(lambda L, x, w, b: L.conv2d(x, cw(L, w), b, 2, 1, 1, 2),
              P(rng, (2, 4, 7, 6), "float32", lay), P(rng, (6, 2, 3, 3), "float32", lay),
              P(rng, (6,)))
        grads(lambda L, x, w, b: L.conv1d(x, cw(L, w), b, 1, 2, 2),
              P(rng, (2, 3, 9), "float32", lay), P(rng, (4, 3, 3), "float32", lay), P(rng, (4,)))
    x64 = lambda *s: P(rng, s, "float64")  # noqa: E731
    gradcheck(lambda L, x, w, b: L.conv2d(x, w, b, (2, 1), 1, (1, 2), 2), x64(1, 4, 6, 5),
              x64(4, 2, 3, 2), x64(4))
    gradcheck(lambda L, x, w, b: L.conv1d(x, w, b, 2, 1, 1, 1), x64(2, 2, 7), x64(3, 2, 3), x64(3))
    gradgradcheck(lambda L, x, w, b: L.conv2d(x, w, b, 2, 1, 1, 2), x64(1, 4, 5, 5),
                  x64(4, 2, 3, 3), x64(4))
    gradgradcheck(lambda L, x, w: L.conv2d(x, w, None, 1, 0, 2, 1), x64(2, 2, 6, 6),
                  x64(3, 2, 2, 2))
    gradgradcheck(lambda L, x, w, b: L.conv1d(x, w, b, 2, 1, 1, 1), x64(2, 2, 7), x64(3, 2, 3),
                  x64(3))
    # errors from the composites
    both(lambda L, x, w: L.conv2d(x, w), P(rng, (2, 3)), P(rng, (3, 3, 1, 1)), what="2-d input")
    both(lambda L, x, w: L.conv1d(x, w), P(rng, (1, 2, 3, 4, 5)), P(rng, (3, 2, 1)),
         what="5-d input to conv1d")
    both(lambda L, x, w: L.conv2d(x, w, groups=2), P(rng, (1, 3, 5, 5)), P(rng, (4, 1, 3, 3)),
         what="in_channels not divisible by groups")
    both(lambda L, x, w: L.conv2d(x, w), P(rng, (1, 3, 2, 2)), P(rng, (4, 3, 3, 3)),
         what="kernel larger than input")
    both(lambda L, x, w: L.conv2d(x, w, padding=-1), P(rng, (1, 3, 5, 5)), P(rng, (4, 3, 3, 3)),
         what="negative padding")


def test_conv_padding_modes(rng):
    for dt in ("float32", "float64", "bfloat16"):
        for k, d in [(3, 1), (4, 1), (2, 3), (5, 2)]:
            x, w = P(rng, (2, 4, 11), dt, "transposed"), P(rng, (6, 2, k), dt)
            for mode in ("same", "valid"):
                both(lambda L, x, w: L.conv1d(x, w, None, 1, mode, d, 2), x, w, **low_tol(dt))
            x, w = P(rng, (2, 2, 9, 8), dt), P(rng, (3, 2, k, 3), dt)
            b = P(rng, (3,), dt)
            for mode in ("same", "valid"):
                both(lambda L, x, w, b: L.conv2d(x, w, b, 1, mode, (d, 1)), x, w, b,
                     **low_tol(dt))
                both(lambda L, x, w: L.conv2d(x, w, padding=mode), x, w, **low_tol(dt))
    both(lambda L, x, w: L.conv2d(x, w, padding="same"), P(rng, (2, 9, 8)), P(rng, (3, 2, 4, 3)),
         what="unbatched same", **CONV_TOL)
    x, w, b = P(rng, (2, 2, 7, 6)), P(rng, (3, 2, 4, 3)), P(rng, (3,))
    grads(lambda L, x, w, b: L.conv2d(x, w, b, padding="same"), x, w, b)
    gradcheck(lambda L, x, w: L.conv2d(x, w, padding="same", dilation=2),
              P(rng, (1, 2, 6, 6), "float64"), P(rng, (2, 2, 2, 3), "float64"))
    gradgradcheck(lambda L, x, w: L.conv1d(x, w, None, 1, "same"), P(rng, (1, 2, 6), "float64"),
                  P(rng, (2, 2, 4), "float64"))
    both(lambda L, x, w: L.conv2d(x, w, stride=2, padding="same"), x, w, what="strided same")
    both(lambda L, x, w: L.conv2d(x, w, padding="full"), x, w, what="unknown padding string")


def test_conv_transpose(rng):
    grid = [
        # input, weight (Cin, Cout/g, k...), stride, padding, output_padding, groups, dilation
        ((2, 4, 5, 4), (4, 3, 3, 3), 1, 0, 0, 1, 1),
        ((2, 4, 5, 4), (4, 3, 3, 2), 2, 1, 1, 1, 1),
        ((1, 4, 4, 4), (4, 2, 3, 3), (2, 3), (1, 0), (1, 2), 2, 1),
        ((2, 4, 3, 3), (4, 1, 2, 2), 2, 0, 0, 4, (2, 1)),
        ((2, 4, 3, 3), (4, 2, 3, 3), 1, 1, (1, 0), 1, 2),
        ((0, 4, 3, 3), (4, 2, 3, 3), 1, 0, 0, 1, 1),
    ]
    for dt in FLOATS:
        for lay in ("contig", "transposed"):
            for xs, ws, s, p, op, g, d in grid:
                x, w, b = P(rng, xs, dt, lay), P(rng, ws, dt, lay), P(rng, (ws[1] * g,), dt)
                both(lambda L, x, w, b: transpose_fn(L, F.conv_transpose2d, "conv_transpose2d",
                                                     dt)(x, cw(L, w), b, s, p, op, g, d),
                     x, w, b, **low_tol(dt))
            x, w, b = P(rng, (2, 4, 6), dt, lay), P(rng, (4, 3, 3), dt, lay), P(rng, (6,), dt)
            for s, p, op, d in [(1, 0, 0, 1), (2, 1, 1, 1), (3, 2, 1, 2)]:
                both(lambda L, x, w, b: transpose_fn(L, F.conv_transpose1d, "conv_transpose1d",
                                                     dt)(x, cw(L, w), b, s, p, op, 2, d),
                     x, w, b, **low_tol(dt))
    both(lambda L, x, w: L.conv_transpose2d(x, w, stride=2), P(rng, (4, 3, 3)),
         P(rng, (4, 2, 2, 2)), what="unbatched", **CONV_TOL)
    x, w, b = P(rng, (2, 4, 4, 3), "float32", "transposed"), P(rng, (4, 3, 3, 3)), P(rng, (6,))
    grads(lambda L, x, w, b: L.conv_transpose2d(x, cw(L, w), b, 2, 1, 1, 2), x, w, b)
    x64 = lambda *s: P(rng, s, "float64")  # noqa: E731
    gradcheck(lambda L, x, w, b: L.conv_transpose2d(x, w, b, 2, 1, 1, 2, 1), x64(1, 4, 3, 3),
              x64(4, 2, 3, 3), x64(4))
    gradcheck(lambda L, x, w: L.conv_transpose1d(x, w, None, 2, 0, 1, 1, 2), x64(2, 2, 4),
              x64(2, 3, 2))
    gradgradcheck(lambda L, x, w, b: L.conv_transpose2d(x, w, b, 2, 1, 1, 2, 1), x64(1, 4, 3, 3),
                  x64(4, 2, 3, 3), x64(4))
    gradgradcheck(lambda L, x, w: L.conv_transpose2d(x, w, None, (1, 2), 0, (0, 1), 1, 2),
                  x64(1, 2, 3, 3), x64(2, 2, 2, 2))
    # errors
    both(lambda L, x, w: L.conv_transpose2d(x, w, stride=1, output_padding=1),
         P(rng, (1, 4, 3, 3)), P(rng, (4, 2, 3, 3)), what="output_padding >= stride")
    both(lambda L, x, w: L.conv_transpose2d(x, w), P(rng, (1, 3, 3, 3)), P(rng, (4, 2, 3, 3)),
         what="channel mismatch")
    both(lambda L, x, w: L.conv_transpose1d(x, w), P(rng, (4,)), P(rng, (4, 2, 3)),
         what="1-d input")
    both(lambda L, x, w: L.conv_transpose2d(x, w, padding=3), P(rng, (1, 4, 2, 2)),
         P(rng, (4, 2, 3, 3)), what="non-positive output size")


def test_conv_backward_weight(rng):
    """_convolution_backward_weight against aten::convolution_backward's weight gradient."""
    cases = [
        ((2, 4, 7, 6), (6, 2, 3, 3), [2, 1], [1, 1], [1, 2], False, [0, 0], 2),
        ((2, 3, 5, 5), (4, 3, 1, 1), [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
        ((2, 4, 3, 4), (4, 3, 3, 2), [2, 2], [1, 0], [1, 1], True, [1, 1], 1),
        ((2, 4, 9), (6, 2, 3), [2], [1], [2], False, [0], 2),
    ]
    for dt in ("float32", "float64"):
        for xs, ws, s, p, d, tr, op, g in cases:
            x, w = make_pair(rng, xs, dt), make_pair(rng, ws, dt)
            y = torch.ops.aten.convolution(x.t, w.t, None, s, p, d, tr, op, g)
            go = P(rng, tuple(y.shape), dt, "transposed")
            ref = torch.ops.aten.convolution_backward(go.t, x.t, w.t, None, s, p, d, tr, op, g,
                                                      [False, True, False])[1]
            got = retorch._convolution_backward_weight(go.r, x.r, list(ws), s, p, d, tr, g)
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)
            if dt == "float64":
                gradcheck(lambda L, go, x: L._convolution_backward_weight(go, x, list(ws), s, p, d,
                                                                          tr, g), go, x)
    with pytest.raises(RuntimeError):
        retorch._convolution_backward_weight(retorch.zeros(1, 2, 3, 3), retorch.zeros(1, 3, 5, 5),
                                             [2, 2, 3, 3], [1], [0], [1], False, 1)


# ---------------------------------------------------------------- pooling

POOL_GRID = [
    # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), ((2, 3), (1, 2), (1, 0), 1,
                                                                     False),
    (3, 1, 1, 2, False), (2, 3, 0, (2, 1), True), ((3, 1), (2, 1), 0, 1, True),
]


def mp2(L, x, k, s, p, d, c):
    """F.max_pool2d for torch; retorch.max_pool2d (stride [] where F takes None)."""
    if is_torch(L):
        return F.max_pool2d(x, k, s, p, d, c)
    return L.max_pool2d(x, k, [] if s is None else s, p, d, c)


def test_max_pool(rng):
    for dt in FLOATS:
        for lay in ("contig", "transposed"):
            for shape in ((2, 3, 7, 6), (3, 8, 5)):
                x = P(rng, shape, dt, lay, distinct=True)
                for k, s, p, d, c in POOL_GRID:
                    both(lambda L, x: mp2(L, x, k, s, p, d, c), x)
                    both(lambda L, x: aten(L, "max_pool2d_with_indices")(
                        x, k, [] if s is None else s, p, d, c), x)
            x = P(rng, (2, 3, 9), dt, lay, distinct=True)
            for k, s, p, d, c in [(2, None, 0, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False),
                                  (2, 3, 1, 1, True)]:
                both(lambda L, x: (F.max_pool1d(x, k, s, p, d, c) if is_torch(L) else
                                   L.max_pool1d(x, k, [] if s is None else s, p, d, c)), x)
            both(lambda L, x: fn_of(L, F.max_pool1d, "max_pool1d")(x, 2), P(rng, (3, 8), dt))
    both(lambda L, x: L.max_pool2d(x, 2), P(rng, (2, 2, 4, 4), special=True), what="nan/inf")
    both(lambda L, x: aten(L, "max_pool2d_with_indices")(x, 2), P(rng, (0, 2, 4, 4)),
         what="empty batch")
    x = P(rng, (2, 3, 7, 6), "float32", "transposed", distinct=True)
    for k, s, p, d, c in POOL_GRID:
        grads(lambda L, x: mp2(L, x, k, s, p, d, c), x)
        gradcheck(lambda L, x: mp2(L, x, k, s, p, d, c), P(rng, (1, 2, 6, 5), "float64",
                                                                 distinct=True))
    grads(lambda L, x: L.max_pool1d(x, 3, 2, 1), P(rng, (2, 3, 9), distinct=True))
    gradcheck(lambda L, x: L.max_pool1d(x, 3, 2, 1, 1, True), P(rng, (2, 8), "float64",
                                                                 distinct=True))
    gradgradcheck(lambda L, x: L.max_pool2d(x, 3, 2, 1), P(rng, (1, 2, 5, 5), "float64",
                                                           distinct=True))
    # errors
    x = P(rng, (1, 2, 4, 4))
    for args in [(0,), (2, 0), (3, 1, 2), (5,), (2, 1, 0, 0)]:
        both(lambda L, x: L.max_pool2d(x, *args), x, what=f"bad args {args}")
    both(lambda L, x: L.max_pool2d(x, 2), P(rng, (4, 4)), what="2-d input")
    both(lambda L, x: L.max_pool2d(x, 2), P(rng, (1, 0, 4, 4)), what="empty channels")
    both(lambda L, x: L.max_pool1d(x, 2), P(rng, (1, 2, 3, 4)), what="4-d input to max_pool1d")
    both(lambda L, x: L.max_pool2d(x, 2), P(rng, (1, 2, 4, 4), "int64"), what="integer input")


def test_max_pool_backward(rng):
    for dt in ("float32", "float64", "bfloat16"):  # Note [16-bit max pools] (torch: no half)
        tol = 1e-6 if dt in ("float32", "float64") else 1e-2
        x = P(rng, (2, 3, 7, 6), dt, distinct=True)
        for k, s, p, d, c in POOL_GRID:
            s_ = [] if s is None else s
            _, idx = torch.ops.aten.max_pool2d_with_indices(x.t, k, s_, p, d, c)
            go = P(rng, tuple(idx.shape), dt, "transposed")
            ridx = retorch.from_numpy(idx.numpy())
            ref = torch.ops.aten.max_pool2d_with_indices_backward(go.t, x.t, k, s_, p, d, c, idx)
            got = retorch.max_pool2d_with_indices_backward(go.r, x.r, k, s_, p, d, c, ridx)
            assert str(got.dtype) == str(ref.dtype)
            np.testing.assert_allclose(got.float().numpy(), ref.float().numpy(), rtol=tol,
                                       atol=tol)
    bad = retorch.from_numpy(np.full((1, 1, 2, 2), 99, np.int64))
    with pytest.raises(IndexError):
        retorch.max_pool2d_with_indices_backward(retorch.ones(1, 1, 2, 2), retorch.ones(1, 1, 4, 4),
                                                 2, 2, 0, 1, False, bad)
    x = P(rng, (1, 2, 5, 5), "float64", distinct=True)
    _, idx = torch.ops.aten.max_pool2d_with_indices(x.t, 3, 2, 1)
    ridx = retorch.from_numpy(idx.numpy())
    go = P(rng, tuple(idx.shape), "float64")
    gradcheck(lambda L, g: L.max_pool2d_with_indices_backward(g, x.r, 3, 2, 1, 1, False, ridx), go)


# Input sizes for the 2x2, stride-2 pool's own kernels (Note [2x2 max pool]): output widths 1,
# 7, 8 (rows two per step, an odd count of them included), 9, 14, 16, 17 and 33 (16 windows per
# step, masked last steps), and odd input heights and widths (a row or column no window covers).
POOL_2X2_SIZES = [(2, 3), (3, 5), (15, 15), (14, 14), (16, 16), (2, 18), (4, 28), (3, 32),
                  (6, 34), (5, 67)]


def pool_2x2_values(rng, shape, special):
    """Floats drawn from a few integers (ties in most windows); with `special`, NaN, inf and -inf
    in about a quarter of the elements (windows with several NaNs among them)."""
    v = rng.integers(-2, 3, shape).astype(np.float32)
    if special:
        u = rng.random(shape)
        v[u < 0.12] = np.nan
        v[(u >= 0.12) & (u < 0.2)] = np.inf
        v[(u >= 0.2) & (u < 0.25)] = -np.inf
    return v


def test_max_pool_2x2(rng, each_cpu_isa):
    """The 2x2, stride-2 max pool on every vector path: values and indices (first maximum in scan
    order, the last NaN) and the backward, from its own indices and from hand-made ones."""
    for h, w in POOL_2X2_SIZES:
        for special in (False, True):
            v = pool_2x2_values(rng, (2, 3, h, w), special)
            x = I(v, "float32")
            for c in (False, True):
                both(lambda L, x: aten(L, "max_pool2d_with_indices")(x, 2, [], 0, 1, c), x,
                     what=f"{h}x{w} ceil_mode={c}")
            grads(lambda L, x: L.max_pool2d(x, 2), x, what=f"grad {h}x{w}")
            _, idx = torch.ops.aten.max_pool2d_with_indices(x.t, 2)
            go = P(rng, tuple(idx.shape))
            for k, s in ((2, []), ([2, 2], [2, 2])):
                both(lambda L, g, x, i: aten(L, "max_pool2d_with_indices_backward")(
                    g, x, k, s, 0, 1, False, i), go, x, I(idx.numpy()), what=f"backward {h}x{w}")
        # Hand-made indices: a tap of each window that need not be its maximum, then also ones
        # outside their window (anywhere in the plane, a neighbour's window, repeated), which
        # the scatter sums wherever they point.
        oh, ow = h // 2, w // 2
        corner = 2 * np.arange(oh)[:, None] * w + 2 * np.arange(ow)[None, :]
        idx = corner + np.array([0, 1, w, w + 1])[rng.integers(0, 4, (2, 3, oh, ow))]
        x = P(rng, (2, 3, h, w))
        go = P(rng, (2, 3, oh, ow))

        def back(L, g, x, i):
            return aten(L, "max_pool2d_with_indices_backward")(g, x, 2, 2, 0, 1, False, i)
        both(back, go, x, I(idx), what=f"own-window indices {h}x{w}")
        idx[0, 1].flat[rng.integers(oh * ow)] = rng.integers(h * w)
        idx[1, 0].flat[0] = idx[1, 0].flat[-1]
        idx[1, 2, -1, -1] = h * w - 1  # the corner no window covers when h and w are odd
        both(back, go, x, I(idx), what=f"indices outside their window {h}x{w}")


AVG_GRID = [
    # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    (2, None, 0, False, True, None), (3, 2, 1, False, True, None), (3, 2, 1, True, False, None),
    ((2, 3), (1, 2), (1, 1), True, True, None), (3, 2, 1, False, False, 2),
    ((3, 2), 3, (1, 0), True, True, 5), (3, 1, 0, False, True, None),
]


def ap2(L, x, k, s, p, c, cip, dv):
    """F.avg_pool2d for torch; retorch.avg_pool2d (stride [] where F takes None)."""
    if is_torch(L):
        return F.avg_pool2d(x, k, s, p, c, cip, dv)
    return L.avg_pool2d(x, k, [] if s is None else s, p, c, cip, dv)


def test_avg_pool2d(rng):
    for dt in FLOATS + ["int64", "int32"]:
        for lay in ("contig", "transposed"):
            # (rows of 70: the vector loops of Note [Separable average pool] and their tails)
            for shape in ((2, 3, 7, 6), (3, 5, 8), (2, 2, 13, 70)):
                x = P(rng, shape, dt, lay)
                for k, s, p, c, cip, dv in AVG_GRID:
                    both(lambda L, x: ap2(L, x, k, s, p, c, cip, dv), x)
    x = P(rng, (2, 3, 7, 6), "float32", "transposed")
    wide = P(rng, (2, 2, 13, 70), "float64")
    for k, s, p, c, cip, dv in AVG_GRID:
        grads(lambda L, x: ap2(L, x, k, s, p, c, cip, dv), x)
        grads(lambda L, x: ap2(L, x, k, s, p, c, cip, dv), wide)
        gradcheck(lambda L, x: ap2(L, x, k, s, p, c, cip, dv), P(rng, (1, 2, 5, 6),
                                                                        "float64"))
        s_ = [] if s is None else s
        go = P(rng, tuple(F.avg_pool2d(x.t, k, s, p, c, cip, dv).shape), "float32", "transposed")
        both(lambda L, g, x: aten(L, "avg_pool2d_backward")(g, x, k, s_, p, c, cip, dv), go, x)
    gradgradcheck(lambda L, x: L.avg_pool2d(x, 3, 2, 1, True, False), P(rng, (1, 2, 5, 5),
                                                                       "float64"))
    both(lambda L, x: nnf(L).avg_pool2d(x, 2), P(rng, (0, 2, 4, 4)), what="empty batch")
    x = P(rng, (1, 2, 4, 4))
    for args in [(0,), (2, 0), (3, 1, 2), (5,)]:
        both(lambda L, x: nnf(L).avg_pool2d(x, *args), x, what=f"bad args {args}")
    both(lambda L, x: nnf(L).avg_pool2d(x, 2, divisor_override=0), x, what="divisor 0")
    for shape in ((4, 4), (4,), (1, 1, 1, 4, 4)):
        both(lambda L, x: nnf(L).avg_pool2d(x, 2), P(rng, shape), what=f"input of size {shape}")
        both(lambda L, x: L.max_pool2d(x, 2), P(rng, shape), what=f"input of size {shape}")


def test_adaptive_avg_pool2d(rng):
    for dt in FLOATS:
        for lay in ("contig", "transposed"):
            for shape in ((2, 3, 7, 6), (3, 5, 8)):
                x = P(rng, shape, dt, lay)
                for out in ((3, 2), (1, 1), (7, 6), (4, 5), 2, (10, 9)):
                    both(lambda L, x: fn_of(L, F.adaptive_avg_pool2d, "adaptive_avg_pool2d")(
                        x, out), x)
    # rows of 70 (the row sums' vector loops), windows of uneven size, outputs above the input
    wide = P(rng, (2, 2, 13, 70), "float64")
    for out in ((7, 5), (13, 70), (20, 90), (3, 33)):
        both(lambda L, x: fn_of(L, F.adaptive_avg_pool2d, "adaptive_avg_pool2d")(x, out), wide)
        grads(lambda L, x: fn_of(L, F.adaptive_avg_pool2d, "adaptive_avg_pool2d")(x, out), wide)
    x = P(rng, (2, 3, 7, 6), "float32", "transposed")
    for out in ((3, 2), (4, 5), (1, 1)):
        grads(lambda L, x: fn_of(L, F.adaptive_avg_pool2d, "adaptive_avg_pool2d")(x, out), x)
        gradcheck(lambda L, x: L.adaptive_avg_pool2d(x, out), P(rng, (1, 2, 5, 6), "float64"))
        go = P(rng, (2, 3) + out, "float32")
        both(lambda L, g, x: aten(L, "_adaptive_avg_pool2d_backward")(g, x), go, x)
    gradgradcheck(lambda L, x: L.adaptive_avg_pool2d(x, (3, 4)), P(rng, (1, 2, 5, 6), "float64"))
    # (F.adaptive_avg_pool2d raises ValueError in Python for 2-d inputs; aten's is the oracle)
    for shape in ((4, 4), (1, 0, 4, 4), (1, 1, 1, 4, 4), (1, 3, 0, 4), (0, 4, 4), (3, 0, 4),
                  (0, 3, 4, 4)):
        both(lambda L, x: aten(L, "adaptive_avg_pool2d")(x, (2, 2)), P(rng, shape),
             what=f"input of size {shape}")
        both(lambda L, x: aten(L, "adaptive_max_pool2d")(x, (2, 2)), P(rng, shape),
             what=f"input of size {shape}")


def test_adaptive_max_pool2d(rng):
    for dt in FLOATS:
        for lay in ("contig", "transposed"):
            for shape in ((2, 3, 7, 6), (3, 5, 8)):
                x = P(rng, shape, dt, lay, distinct=True)
                for out in ((3, 2), (1, 1), (7, 6), (4, 5), 2, (10, 9)):
                    both(lambda L, x: aten(L, "adaptive_max_pool2d")(x, out), x)
                    both(lambda L, x: fn_of(L, F.adaptive_max_pool2d, "adaptive_max_pool2d")(
                        x, out, True) if is_torch(L) else L.adaptive_max_pool2d(x, out), x)
    both(lambda L, x: aten(L, "adaptive_max_pool2d")(x, (2, 2)), P(rng, (1, 2, 4, 4), special=True),
         what="nan/inf")
    x = P(rng, (2, 3, 7, 6), "float32", "transposed", distinct=True)
    for out in ((3, 2), (4, 5)):
        grads(lambda L, x: aten(L, "adaptive_max_pool2d")(x, out)[0], x)
        gradcheck(lambda L, x: L.adaptive_max_pool2d(x, out)[0], P(rng, (1, 2, 5, 6), "float64",
                                                                    distinct=True))
        _, idx = torch.ops.aten.adaptive_max_pool2d(x.t, out)
        go = P(rng, tuple(idx.shape), "float32")
        ref = torch.ops.aten.adaptive_max_pool2d_backward(go.t, x.t, idx)
        got = retorch.adaptive_max_pool2d_backward(go.r, x.r, retorch.from_numpy(idx.numpy()))
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-6, atol=1e-6)
    gradgradcheck(lambda L, x: L.adaptive_max_pool2d(x, (2, 3))[0],
                  P(rng, (1, 2, 5, 6), "float64", distinct=True))
    both(lambda L, x: aten(L, "adaptive_max_pool2d")(x, (2, 2)), P(rng, (4, 4)), what="2-d input")


# ---------------------------------------------------------------- resampling

def test_im2col_col2im(rng):
    grid = [((2, 2), (1, 1), (0, 0), (1, 1)), ((3, 2), (2, 1), (1, 0), (2, 1)),
            ((2, 2), (1, 2), (1, 1), (3, 2)), ((1, 1), (1, 1), (0, 0), (1, 1))]
    for dt in ("float32", "float64", "bfloat16", "float16", "int64"):
        for lay in ("contig", "transposed"):
            for shape in ((2, 3, 7, 6), (3, 6, 5)):
                x = P(rng, shape, dt, lay)
                for k, d, p, s in grid:
                    both(lambda L, x: aten(L, "im2col")(x, k, d, p, s), x)
                    both(lambda L, x: F.unfold(x, k, d, p, s) if is_torch(L) else
                         L.im2col(x, k, d, p, s), x)
            if dt == "int64":  # torch raises for integers (checked above); no col2im input
                continue
            for k, d, p, s in grid:
                cols = torch.ops.aten.im2col(make_pair(rng, (2, 3, 7, 6), dt).t, k, d, p, s)
                c = P(rng, tuple(cols.shape), dt, lay)
                both(lambda L, c: aten(L, "col2im")(c, (7, 6), k, d, p, s), c)
                both(lambda L, c: F.fold(c, (7, 6), k, d, p, s) if is_torch(L) else
                     L.col2im(c, (7, 6), k, d, p, s), c)
                c2 = P(rng, tuple(cols.shape[1:]), dt)
                both(lambda L, c: aten(L, "col2im")(c, (7, 6), k, d, p, s), c2, what="unbatched")
    for k, d, p, s in grid:
        grads(lambda L, x: aten(L, "im2col")(x, k, d, p, s), P(rng, (2, 3, 5, 6), "float32",
                                                             "transposed"))
        gradcheck(lambda L, x: L.im2col(x, k, d, p, s), P(rng, (1, 2, 4, 5), "float64"))
        cols = torch.ops.aten.im2col(torch.zeros(1, 2, 5, 4), k, d, p, s)
        gradcheck(lambda L, c: L.col2im(c, (5, 4), k, d, p, s),
                  P(rng, tuple(cols.shape), "float64"))
    both(lambda L, x: aten(L, "im2col")(x, 5, 1, 0, 1), P(rng, (1, 2, 3, 3)), what="too small")
    both(lambda L, x: aten(L, "im2col")(x, 0, 1, 0, 1), P(rng, (1, 2, 3, 3)), what="kernel 0")
    both(lambda L, x: aten(L, "im2col")(x, 2, 1, -1, 1), P(rng, (1, 2, 3, 3)), what="padding<0")
    for shape in ((2, 3), (3,), (1, 1, 1, 3, 3), (1, 0, 3, 3)):
        both(lambda L, x: aten(L, "im2col")(x, 2, 1, 0, 1), P(rng, shape), what=f"{shape} input")
    for shape in ((4,), (1, 1, 4, 4), (1, 0, 4)):
        both(lambda L, c: aten(L, "col2im")(c, (3, 3), 2, 1, 0, 1), P(rng, shape),
             what=f"{shape} input")
    both(lambda L, c: aten(L, "col2im")(c, (4, 4), 2, 1, 0, 1), P(rng, (1, 5, 9)),
         what="not divisible by kernel")
    both(lambda L, c: aten(L, "col2im")(c, (4, 4), 2, 1, 0, 1), P(rng, (1, 8, 8)),
         what="wrong block count")


def test_pixel_shuffle(rng):
    for dt in ("float32", "float64", "float16", "bfloat16", "int32", "bool"):
        for lay in ("contig", "transposed"):
            for shape, r in [((2, 8, 3, 4), 2), ((9, 2, 2), 3), ((2, 1, 4, 3, 2), 1),
                             ((1, 2, 8, 2, 2), 2)]:
                x = P(rng, shape, dt, lay)
                both(lambda L, x: L.pixel_shuffle(x, r), x)
                both(lambda L, x: F.pixel_shuffle(x, r) if is_torch(L) else L.pixel_shuffle(x, r),
                     x)
            for shape, r in [((2, 2, 4, 6), 2), ((1, 6, 9), 3), ((2, 1, 3, 4, 2), 2)]:
                x = P(rng, shape, dt, lay)
                both(lambda L, x: L.pixel_unshuffle(x, r), x)
    grads(lambda L, x: L.pixel_shuffle(x, 2), P(rng, (2, 8, 3, 4), "float32", "transposed"))
    grads(lambda L, x: L.pixel_unshuffle(x, 2), P(rng, (2, 2, 4, 6), "float32", "transposed"))
    gradcheck(lambda L, x: L.pixel_shuffle(x, 2), P(rng, (1, 4, 2, 3), "float64"))
    gradcheck(lambda L, x: L.pixel_unshuffle(x, 2), P(rng, (1, 1, 4, 2), "float64"))
    both(lambda L, x: L.pixel_shuffle(x, 2), P(rng, (2, 5, 3, 3)), what="channels % r^2")
    both(lambda L, x: L.pixel_shuffle(x, 2), P(rng, (4, 3)), what="2-d input")
    both(lambda L, x: L.pixel_shuffle(x, 0), P(rng, (1, 4, 3, 3)), what="factor 0")
    both(lambda L, x: L.pixel_unshuffle(x, 2), P(rng, (1, 4, 3, 4)), what="odd height")


def _interp(L, x, size=None, scale=None, mode="nearest", align_corners=None):
    """F.interpolate for torch; the matching aten-style call for retorch."""
    if is_torch(L):
        return F.interpolate(x, size=size, scale_factor=scale, mode=mode,
                             align_corners=align_corners)
    h, w = x.shape[-2:]
    if size is not None:
        out, sh, sw = (size, size) if isinstance(size, int) else size, None, None
    else:
        sh, sw = (scale, scale) if not isinstance(scale, tuple) else scale
        out = (int(np.floor(h * sh)), int(np.floor(w * sw)))
    if mode == "nearest":
        return L.upsample_nearest2d(x, out, sh, sw)
    return L.upsample_bilinear2d(x, out, bool(align_corners), sh, sw)


RESIZES = [{"size": (8, 9)}, {"size": (3, 2)}, {"size": 5}, {"size": (6, 10)}, {"scale": 2.0},
           {"scale": 1.5}, {"scale": (0.5, 3.0)}, {"scale": 1.7}, {"size": (4, 5)}]


def test_upsample_nearest2d(rng):
    for dt in ("float32", "float64", "bfloat16", "float16", "uint8", "int64", "bool"):
        for lay in ("contig", "transposed"):
            x = P(rng, (2, 3, 4, 5), dt, lay)
            for kw in RESIZES:
                both(lambda L, x: _interp(L, x, **kw), x)
    x = P(rng, (2, 3, 4, 5), "float32", "transposed")
    for kw in RESIZES:
        grads(lambda L, x: _interp(L, x, **kw), x)
        gradcheck(lambda L, x: _interp(L, x, **kw), P(rng, (1, 2, 4, 5), "float64"))
    for out, inp in [((8, 10), (2, 3, 4, 5)), ((3, 7), (1, 2, 4, 5))]:
        go = P(rng, inp[:2] + out, "float32")
        both(lambda L, g: aten(L, "upsample_nearest2d_backward")(g, out, inp), go)
    gradgradcheck(lambda L, x: _interp(L, x, scale=1.5), P(rng, (1, 2, 3, 4), "float64"))
    both(lambda L, x: _interp(L, x, size=(0, 3)), P(rng, (1, 2, 4, 5)), what="zero output")
    both(lambda L, x: aten(L, "upsample_nearest2d")(x, [4, 4]), P(rng, (2, 4, 5)),
         what="3-d input")


def test_upsample_bilinear2d(rng):
    for dt in ("float32", "float64", "bfloat16"):
        # torch's bfloat16 kernel rounds its separable (width, then height) passes to bfloat16;
        # retorch rounds once, so they differ by a few bfloat16 ulps.
        tol = {"rtol": 2e-2, "atol": 2e-2} if dt == "bfloat16" else {"rtol": 1e-5, "atol": 1e-5}
        for lay in ("contig", "transposed"):
            x = P(rng, (2, 3, 4, 5), dt, lay)
            for kw in RESIZES + [{"size": (1, 1)}, {"size": (1, 7)}]:
                for ac in (False, True):
                    both(lambda L, x: _interp(L, x, mode="bilinear", align_corners=ac, **kw), x,
                         **tol)
    x = P(rng, (2, 3, 4, 5), "float32", "transposed")
    for kw in RESIZES:
        for ac in (False, True):
            grads(lambda L, x: _interp(L, x, mode="bilinear", align_corners=ac, **kw), x)
            gradcheck(lambda L, x: _interp(L, x, mode="bilinear", align_corners=ac, **kw),
                      P(rng, (1, 2, 4, 5), "float64"))
    for out, inp, ac in [((8, 10), (2, 3, 4, 5), False), ((3, 7), (1, 2, 4, 5), True)]:
        go = P(rng, inp[:2] + out, "float32")
        both(lambda L, g: aten(L, "upsample_bilinear2d_backward")(g, out, inp, ac), go,
             rtol=1e-5, atol=1e-5)
    gradgradcheck(lambda L, x: _interp(L, x, size=(5, 7), mode="bilinear", align_corners=False),
                  P(rng, (1, 2, 3, 4), "float64"))
    both(lambda L, x: aten(L, "upsample_bilinear2d")(x, [4, 4], False), P(rng, (1, 2, 4, 5),
                                                                          "int64"),
         what="integer input")


# ---------------------------------------------------------------- padding

def test_constant_pad(rng):
    pads = [[1, 2], [0, 0], [2, 1, 0, 3], [-1, 2], [1, -2, -1, 1], [1, 1, 1, 1, 1, 1], [],
            [-4, 1], [0, 0, -3, 0]]
    for dt in ("float32", "float64", "float16", "bfloat16", "int64", "uint8", "bool"):
        for lay in ("contig", "transposed"):
            x = P(rng, (2, 3, 4), dt, lay)
            for pad in pads:
                both(lambda L, x: aten(L, "constant_pad_nd")(x, pad, 0), x)
                both(lambda L, x: F.pad(x, pad) if is_torch(L) else L.pad(x, pad), x)
                if dt not in ("bool", "uint8"):
                    both(lambda L, x: aten(L, "constant_pad_nd")(x, pad, 3), x)
                    both(lambda L, x: F.pad(x, pad, value=-2.0) if is_torch(L) else
                         L.pad(x, pad, value=-2.0), x)
    x = P(rng, (2, 3, 4), "float32", "transposed")
    for pad in pads[:6]:
        grads(lambda L, x: aten(L, "constant_pad_nd")(x, pad, 1.5), x)
        gradcheck(lambda L, x: L.constant_pad_nd(x, pad, 1.5), P(rng, (2, 3, 4), "float64"))
    # a channels-last input pads into a channels-last output, as in torch
    for L in (torch, retorch):
        xc = L.arange(120.0).reshape(2, 3, 4, 5).contiguous(memory_format=L.channels_last)
        y = (F if L is torch else L.nn.functional).pad(xc, (1, 2, 0, 1), value=-1.0)
        assert y.is_contiguous(memory_format=L.channels_last), L
        assert y.sum().item() == 120 * 119 / 2 - (y.numel() - 120), L
    both(lambda L, x: aten(L, "constant_pad_nd")(x, [1, 2, 3], 0), x, what="odd pad length")
    both(lambda L, x: aten(L, "constant_pad_nd")(x, [1] * 8, 0), x, what="pad too long")
    both(lambda L, x: aten(L, "constant_pad_nd")(x, [-3, -2], 0), x, what="negative size")


def test_mode_pads(rng):
    cases = [("reflect", (2, 5), [2, 3]), ("reflect", (2, 3, 5), [1, 4]),
             ("reflect", (2, 4, 5), [1, 2, 3, 0]), ("reflect", (1, 2, 4, 5), [3, 2, 1, 3]),
             ("replicate", (2, 5), [3, 6]), ("replicate", (2, 3, 5), [0, 2]),
             ("replicate", (2, 4, 5), [5, 2, 1, 7]), ("replicate", (1, 2, 4, 5), [1, 1, 1, 1]),
             ("circular", (1, 2, 5), [2, 3]), ("circular", (1, 2, 4, 5), [1, 2, 3, 4]),
             ("reflect", (2, 3, 5), [-1, 2]), ("replicate", (2, 3, 5), [-2, 1]),
             ("circular", (1, 2, 4, 5), [-1, 2, 0, -1]),
             ("reflect", (1, 2, 3, 4, 5), [1, 2, 0, 2, 2, 1]),
             ("replicate", (2, 3, 4, 5), [2, 1, 1, 0, 3, 1]),
             ("circular", (1, 1, 3, 4, 5), [1, 1, 2, 0, 1, 2])]
    for dt in ("float32", "float64", "bfloat16", "float16"):
        for lay in ("contig", "transposed"):
            for mode, shape, pad in cases:
                x = P(rng, shape, dt, lay)
                both(lambda L, x: F.pad(x, pad, mode) if is_torch(L) else L.pad(x, pad, mode), x)
                name = {"reflect": "reflection_pad", "replicate": "replication_pad"}.get(mode)
                if name and len(pad) < 6:  # 3-d padding goes through pad() only
                    both(lambda L, x: aten(L, f"{name}{len(pad) // 2}d")(x, pad), x)
    for mode, shape, pad in cases:
        x = P(rng, shape, "float32", "transposed")
        grads(lambda L, x: F.pad(x, pad, mode) if is_torch(L) else L.pad(x, pad, mode), x)
        gradcheck(lambda L, x: L.pad(x, pad, mode), P(rng, shape, "float64"))
    gradgradcheck(lambda L, x: L.pad(x, [2, 1, 1, 2], "reflect"), P(rng, (1, 2, 4, 4), "float64"))
    # errors
    x3 = P(rng, (1, 2, 3))
    both(lambda L, x: F.pad(x, [3, 0], "reflect") if is_torch(L) else L.pad(x, [3, 0], "reflect"),
         x3, what="reflect pad >= input size")
    both(lambda L, x: aten(L, "reflection_pad1d")(x, [1, 3]), x3, what="reflect pad >= size")
    both(lambda L, x: aten(L, "reflection_pad2d")(x, [1, 1, 2, 2]), x3, what="reflect 2d")
    both(lambda L, x: aten(L, "replication_pad1d")(x, [-2, -2]), x3, what="negative output")
    both(lambda L, x: aten(L, "reflection_pad1d")(x, [1, 1]), P(rng, (2, 0, 3)),
         what="empty channel")
    both(lambda L, x: F.pad(x, [1, 1], "reflect", value=1.0) if is_torch(L) else
         L.pad(x, [1, 1], "reflect", 1.0), x3, what="value with reflect")
    both(lambda L, x: F.pad(x, [1, 1, 1], "replicate") if is_torch(L) else
         L.pad(x, [1, 1, 1], "replicate"), x3, what="odd pad")
    both(lambda L, x: F.pad(x, [1, 1], "foo") if is_torch(L) else L.pad(x, [1, 1], "foo"), x3,
         what="unknown mode")
    both(lambda L, x: F.pad(x, [5, 5], "circular") if is_torch(L) else
         L.pad(x, [5, 5], "circular"), x3, what="circular wraps twice")
    for shape, pad, mode in [((2, 3), [1, 1, 1, 1], "reflect"), ((5,), [1, 1], "reflect"),
                             ((2, 3, 4, 5, 6), [1, 1], "replicate"), ((3, 4), [1, 1], "circular"),
                             ((1, 3, 4), [1, 1, 1, 1], "circular")]:
        both(lambda L, x: F.pad(x, pad, mode) if is_torch(L) else L.pad(x, pad, mode),
             P(rng, shape), what=f"{mode} pad {pad} of {shape}")
    assert retorch.pad(retorch.arange(4.0).reshape(1, 4), [1, 1], mode="reflect").tolist() == \
        [[1.0, 0.0, 1.0, 2.0, 3.0, 2.0]]


def test_max_pool_2x2_indices_follow_scan_order_with_ties_and_nans():
    # The unrolled 2x2 stride-2 path: the first maximum in scan order wins, a NaN wins over any
    # number and a later NaN over an earlier one; values and indices as torch's.
    nan, inf = float("nan"), float("inf")
    windows = [[1, 1, 1, 1], [nan, 1, nan, 2], [0, 2, 2, 1], [-inf, -inf, -inf, -inf],
               [3, nan, 5, 5], [-1, -2, -1, -2], [inf, inf, nan, 0], [0, -0.0, 0, -0.0]]
    x = np.zeros((2, 1, 4, 4), np.float32)
    for w, vals in enumerate(windows):
        n, r, c = w // 4, (w % 4) // 2 * 2, w % 2 * 2
        x[n, 0, r:r + 2, c:c + 2] = np.array(vals, np.float32).reshape(2, 2)
    for dtype in ("float32", "float64"):
        v = x.astype(dtype)
        got = aten(retorch, "max_pool2d_with_indices")(retorch.from_numpy(v.copy()), [2, 2])
        want = aten(torch, "max_pool2d_with_indices")(torch.from_numpy(v.copy()), [2, 2])
        np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
