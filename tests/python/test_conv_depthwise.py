"""The direct depthwise convolution kernels (groups == input channels, one input channel per
group) against PyTorch: forward, input and weight gradients over kernel sizes, strides, padding,
dilation, channel multipliers and layouts, the transposed depthwise convolution they also run,
and gradcheck / gradgradcheck on tiny cases."""
import pytest

import retorch
import torch.nn.functional as F
from custom_helpers import P, both, gradcheck, gradgradcheck, grads

TOL = {"rtol": 1e-4, "atol": 1e-4}

# (N, C, H, W), multiplier, (kh, kw), stride, padding, dilation
SHAPES = [
    ((3, 4, 7, 9), 1, (3, 3), 1, 1, 1),
    ((1, 5, 7, 9), 2, (3, 3), 1, 1, 1),
    ((3, 3, 11, 10), 1, (5, 5), 1, 2, 1),
    ((1, 4, 9, 7), 2, (5, 5), 2, 2, 1),
    ((3, 4, 7, 9), 1, (1, 1), 1, 0, 1),
    ((1, 3, 8, 9), 2, (1, 1), 2, 0, 1),
    ((3, 2, 9, 7), 1, (3, 1), (2, 1), (0, 1), (2, 1)),
    ((1, 4, 10, 11), 1, (3, 3), 2, 1, 1),
    ((3, 3, 12, 13), 2, (3, 3), 1, 2, 2),
    ((1, 2, 9, 8), 1, (3, 3), (1, 2), (2, 0), (1, 2)),
    ((1, 4, 7, 9), 1, (3, 3), 1, 0, 1),             # no padding: the input is its own window
    ((3, 2, 13, 12), 1, (7, 7), 1, 3, 1),
    ((1, 3, 5, 6), 2, (2, 4), 1, (1, 2), 1),        # even, non-square kernel
    ((3, 2, 4, 3), 1, (3, 3), 1, 2, 1),             # padding wider than the image
]


def dconv(L, x, w, b, s, p, d, g):
    f = F.conv2d if L.__name__ == "torch" else retorch.conv2d
    return f(x, w, b, s, p, d, g)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs,m,k,s,p,d", SHAPES)
def test_depthwise_forward_and_grads(rng, dtype, xs, m, k, s, p, d):
    C = xs[1]
    x, w, b = P(rng, xs, dtype), P(rng, (C * m, 1) + k, dtype), P(rng, (C * m,), dtype)
    for bias in (b, None):
        both(dconv, x, w, bias, s, p, d, C, **TOL)
        grads(dconv, x, w, bias, s, p, d, C)


@pytest.mark.parametrize("lay", ["transposed", "sliced", "expanded"])
def test_depthwise_non_contiguous(rng, lay):
    x, w, b = P(rng, (3, 4, 9, 7), "float32", lay), P(rng, (8, 1, 3, 3)), P(rng, (8,))
    both(dconv, x, w, b, 1, 1, 1, 4, **TOL)
    grads(dconv, x, w, b, 1, 1, 1, 4)


def test_depthwise_channels_last(rng):
    x, w, b = P(rng, (2, 6, 9, 8)), P(rng, (6, 1, 3, 3)), P(rng, (6,))

    def f(L, x, w, b):
        cl = x.contiguous(memory_format=L.channels_last)
        return dconv(L, cl, w, b, 1, 1, 1, 6)
    both(f, x, w, b, **TOL)
    grads(f, x, w, b)


def test_depthwise_conv1d(rng):
    x, w, b = P(rng, (3, 4, 17)), P(rng, (8, 1, 5)), P(rng, (8,))

    def f(L, x, w, b):
        return (F.conv1d if L.__name__ == "torch" else retorch.conv1d)(x, w, b, 2, 2, 1, 4)
    both(f, x, w, b, **TOL)
    grads(f, x, w, b)


@pytest.mark.parametrize("s,p,op,d,m", [(1, 1, 0, 1, 1), (2, 1, 1, 1, 1), (1, 0, 0, 2, 2),
                                        (2, 2, 0, 1, 2), (3, 0, 2, 1, 1)])
def test_depthwise_conv_transpose2d(rng, s, p, op, d, m):
    # Transposed with one output channel per group: the depthwise input-gradient kernel.
    C = 4
    x, w, b = P(rng, (2, C * m, 6, 7)), P(rng, (C * m, 1, 3, 3)), P(rng, (C,))

    def f(L, x, w, b):
        fn = F.conv_transpose2d if L.__name__ == "torch" else retorch.conv_transpose2d
        return fn(x, w, b, s, p, op, C, d)
    both(f, x, w, b, **TOL)
    grads(f, x, w, b)


def test_depthwise_large_multiplier_falls_back(rng):
    # Multipliers the depthwise kernels leave to the generic path still match.
    x, w, b = P(rng, (2, 2, 9, 8)), P(rng, (32, 1, 3, 3)), P(rng, (32,))
    both(dconv, x, w, b, 1, 1, 1, 2, **TOL)
    grads(dconv, x, w, b, 1, 1, 1, 2)


@pytest.mark.parametrize("s,p,d,m", [(1, 1, 1, 1), (2, 1, 1, 2), (1, 2, 2, 1)])
def test_depthwise_gradcheck(rng, s, p, d, m):
    x, w, b = P(rng, (2, 2, 5, 6), "float64"), P(rng, (2 * m, 1, 3, 3), "float64"), \
        P(rng, (2 * m,), "float64")
    gradcheck(dconv, x, w, b, s, p, d, 2)
    gradgradcheck(dconv, x, w, b, s, p, d, 2)
