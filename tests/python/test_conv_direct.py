"""The direct float32 convolution kernel (stride 1, >= 12 output channels per group) against
PyTorch: forward over shapes that exercise its tiles, chunks, groups, dilation and padding, the
transposed convolution it also runs, and the gradients that go through it; each test runs once
per instruction set the CPU has (AVX2's 6-position tile, AVX-512's 12-position one, and
im2col + GEMM without either)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import retorch
from custom_helpers import P, both, grads

TOL = {"rtol": 1e-4, "atol": 1e-4}

# The scalar build of the kernel does not exist: DEFAULT runs im2col + GEMM, checked all the same.
pytestmark = pytest.mark.usefixtures("each_cpu_isa")

# (N, C, H, W), (O, C/groups, kh, kw), padding, dilation, groups
SHAPES = [
    ((3, 8, 12, 11), (16, 8, 3, 3), 1, 1, 1),
    ((1, 3, 40, 37), (32, 3, 5, 5), (2, 3), (2, 1), 1),       # one image, several chunks
    ((2, 8, 9, 10), (32, 4, 3, 3), (0, 1), 1, 2),             # groups
    ((1, 5, 7, 30), (12, 5, 2, 3), (3, 0), (1, 2), 1),        # partial tile, padding > kernel
    ((4, 1, 28, 28), (16, 1, 5, 5), 2, 1, 1),                 # one input channel (LeNet-like)
    ((2, 16, 14, 14), (64, 16, 3, 3), 1, 1, 1),
    ((2, 3, 6, 6), (28, 3, 6, 6), 0, 1, 1),                   # one output position per image
    # Note [Row convolution] (AVX-512, fewer than 24 output channels): rows of one masked
    # vector, of two (the second masked), a channel block cut short, dilation, groups, one image
    ((3, 2, 14, 13), (8, 2, 3, 3), 1, 1, 1),
    ((2, 3, 20, 30), (18, 3, 3, 3), 1, 1, 1),
    ((2, 1, 16, 16), (6, 1, 3, 3), 2, 2, 1),
    ((2, 4, 16, 16), (10, 2, 3, 3), 1, 1, 2),
    ((1, 2, 15, 15), (7, 2, 5, 5), 2, 1, 1),
    # Note [Sliding taps] (AVX-512, 16- and 32-channel tiles, kernel rows of 3 or 5): the seed
    # ConvNet's second layer, 24 of 32 channels and row dilation 2, one image in three chunks
    # whose rows end in a tile moved back
    ((2, 16, 14, 14), (32, 16, 5, 5), 2, 1, 1),
    ((2, 12, 10, 16), (24, 12, 3, 3), 1, (2, 1), 1),
    ((1, 8, 64, 61), (16, 8, 3, 3), 1, 1, 1),
]


def conv(L, x, w, b, p, d, g):
    f = F.conv2d if L.__name__ == "torch" else retorch.conv2d
    return f(x, w, b, 1, p, d, g)


@pytest.mark.parametrize("xs,ws,p,d,g", SHAPES)
def test_direct_conv2d_forward(rng, xs, ws, p, d, g):
    for lay in ("contig", "transposed"):
        x, w, b = P(rng, xs, "float32", lay), P(rng, ws, "float32", lay), P(rng, (ws[0],))
        both(conv, x, w, b, p, d, g, **TOL)
        both(conv, x, w, None, p, d, g, **TOL)


@pytest.mark.parametrize("xs,ws,p,d,g", SHAPES)
def test_direct_conv2d_gradients(rng, xs, ws, p, d, g):
    # The weight gradient runs the direct kernel (Note [Direct weight gradient]) on AVX-512.
    # Each gradient element sums up to ~2000 products in float32, in another order than
    # PyTorch's GEMMs: atol at a few float32 ulps of such a sum.
    x, w, b = P(rng, xs), P(rng, ws), P(rng, (ws[0],))
    grads(lambda L, x, w, b: conv(L, x, w, b, p, d, g), x, w, b, atol=1e-4)


@pytest.mark.parametrize("c,o", [(16, 32), (1, 16)])  # the direct tiles; the row ones
def test_weight_gradient_keeps_inf_out_of_unused_taps(c, o):
    # An inf in the last image column meets only the taps that read it: the left kernel column
    # never does, so its gradient stays finite (no inf * 0 from the padded grid's extra lanes).
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, c, 12, 12)).astype(np.float32)
    x[:, :, :, -1] = np.inf
    w = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    gws = []
    for L in (torch, retorch):
        xt, wt = L.from_numpy(x.copy()), L.from_numpy(w.copy()).requires_grad_(True)
        f = F.conv2d if L is torch else retorch.conv2d
        out = f(xt, wt, None, 1, 1)
        gws.append(L.autograd.grad(out.sum(), wt)[0].numpy())
    assert np.isfinite(gws[0][..., 0]).all()
    np.testing.assert_array_equal(np.isnan(gws[1]), np.isnan(gws[0]))
    np.testing.assert_allclose(gws[1], gws[0], rtol=1e-4, atol=1e-3)


def test_direct_conv1d(rng):
    x, w, b = P(rng, (2, 16, 50)), P(rng, (24, 16, 3)), P(rng, (24,))
    fn = lambda L, x, w, b: (F.conv1d if L.__name__ == "torch" else retorch.conv1d)(  # noqa: E731
        x, w, b, 1, 2, 2)
    both(fn, x, w, b, **TOL)
    grads(fn, x, w, b)


def test_direct_conv_transpose2d(rng):
    # conv_transpose2d with stride 1 runs as a convolution with the flipped weight.
    for xs, ws, p, op, d in [((2, 8, 6, 7), (8, 16, 3, 3), 1, 0, 1),
                             ((1, 4, 9, 5), (4, 32, 3, 2), (2, 1), (1, 0), (2, 1)),
                             ((3, 6, 5, 5), (6, 16, 5, 5), 0, 0, 1),
                             ((2, 8, 14, 14), (8, 16, 3, 3), 1, 0, 1),
                             ((2, 16, 7, 9), (16, 32, 5, 5), 2, 0, 1)]:
        x, w, b = P(rng, xs), P(rng, ws), P(rng, (ws[1],))
        fn = lambda L, x, w, b: (F.conv_transpose2d if L.__name__ == "torch"  # noqa: E731
                                 else retorch.conv_transpose2d)(x, w, b, 1, p, op, 1, d)
        both(fn, x, w, b, **TOL)


def test_direct_conv_gradients(rng):
    # The input gradient of a 16 -> 32 conv is a 32 -> 16 transposed conv: both direct.
    x, w, b = P(rng, (2, 16, 10, 9)), P(rng, (32, 16, 3, 3)), P(rng, (32,))
    grads(lambda L, x, w, b: conv(L, x, w, b, 1, 1, 1), x, w, b)
    grads(lambda L, x, w, b: conv(L, x, w, b, (2, 0), (1, 2), 2), x, P(rng, (32, 8, 3, 2)), b)


def test_cpu_capability_names(each_cpu_isa):
    cpu = retorch.backends.cpu
    with pytest.raises(RuntimeError, match="unknown instruction set 'sse9'"):
        cpu.set_cpu_capability("sse9")
    assert cpu.get_cpu_capability() == each_cpu_isa  # unchanged by the refused name
    cpu.set_cpu_capability("DEFAULT")
    assert cpu.get_cpu_capability() == "DEFAULT"
