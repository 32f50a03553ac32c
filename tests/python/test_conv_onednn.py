"""Convolutions on oneDNN (Note [oneDNN convolution]): bfloat16 ones (oneDNN's kernels where the
CPU has AVX-512 BF16, the widened float32 kernels elsewhere and for few-channel groups) against
torch's float32 convolution of the same bfloat16 values, rounded once; strided float32 ones
against torch's. Forward, transposed and weight gradients."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retorch
import retorch.nn.functional as RF


def bf16_pair(*shape, seed=0):
    x = torch.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=torch.float32)
    x = x.bfloat16()
    return retorch.tensor(x.float().numpy()).bfloat16(), x


def close(got, want):
    """got (retorch bfloat16) against want (torch float32 of the rounded values): within the
    rounding of the result and float32 sums in another order."""
    assert str(got.dtype) == "torch.bfloat16"
    g = torch.tensor(got.detach().float().numpy())
    want = want.detach()
    scale = want.abs().max().item() + 1e-6
    assert g.shape == want.shape
    assert torch.allclose(g, want, rtol=1 / 128, atol=scale / 256), (g - want).abs().max()


# (N, C, H, W, O, kernel, stride, padding, dilation, groups)
CASES = [
    (4, 16, 12, 12, 32, 3, 1, 1, 1, 1),    # oneDNN everywhere
    (2, 32, 9, 11, 16, 3, 2, 1, 1, 1),     # stride 2, odd sizes: output_padding in the backward
    (2, 16, 10, 10, 16, 3, 1, 2, 2, 1),    # dilation
    (2, 32, 8, 8, 32, 3, 1, 1, 1, 2),      # groups of 16
    (3, 3, 16, 16, 16, 5, 1, 2, 1, 1),     # a 3-channel image: its input gradient widened
    (2, 16, 8, 8, 16, 3, 1, 1, 1, 16),     # depthwise: widened
    (2, 32, 8, 8, 32, 3, 1, 1, 1, 8),      # groups of 4 channels: widened
    (2, 24, 7, 7, 40, 1, 1, 0, 1, 1),      # 1x1
]


@pytest.mark.parametrize("case", CASES)
def test_forward_and_gradients_match_torchs_float32_rounded(case):
    n, c, h, w_, o, k, s, p, d, g = case
    rx, tx = bf16_pair(n, c, h, w_)
    rw, tw = bf16_pair(o, c // g, k, k, seed=1)
    rb, tb = bf16_pair(o, seed=2)
    tx, tw, tb = (t.float().requires_grad_(True) for t in (tx, tw, tb))
    rx, rw, rb = (t.requires_grad_(True) for t in (rx, rw, rb))
    ry = RF.conv2d(rx, rw, rb, s, p, d, g)
    ty = TF.conv2d(tx, tw, tb, s, p, d, g)
    close(ry, ty)
    rgo, tgo = bf16_pair(*ty.shape, seed=3)
    ry.backward(rgo)
    ty.backward(tgo.float())
    close(rx.grad, tx.grad)   # the transposed convolution
    close(rw.grad, tw.grad)   # the weight gradient
    close(rb.grad, tb.grad)


@pytest.mark.parametrize("stride,output_padding", [(1, 0), (2, 0), (2, 1)])
def test_transposed_convolutions_with_bias(stride, output_padding):
    rx, tx = bf16_pair(2, 32, 6, 7)
    rw, tw = bf16_pair(32, 16, 3, 3, seed=1)
    rb, tb = bf16_pair(16, seed=2)
    got = RF.conv_transpose2d(rx, rw, rb, stride, 1, output_padding)
    want = TF.conv_transpose2d(tx.float(), tw.float(), tb.float(), stride, 1, output_padding)
    close(got, want)


def test_one_d_and_empty_batches():
    rx, tx = bf16_pair(3, 16, 20)
    rw, tw = bf16_pair(24, 16, 5, seed=1)
    close(RF.conv1d(rx, rw, None, 2, 2), TF.conv1d(tx.float(), tw.float(), None, 2, 2))
    empty = RF.conv2d(retorch.zeros(0, 16, 8, 8).bfloat16(), retorch.zeros(32, 16, 3, 3).bfloat16())
    assert tuple(empty.shape) == (0, 32, 6, 6) and str(empty.dtype) == "torch.bfloat16"


def test_channels_last_inputs_give_the_same_values():
    rx, tx = bf16_pair(2, 16, 9, 9)
    rw, tw = bf16_pair(32, 16, 3, 3, seed=1)
    got = RF.conv2d(rx.to(memory_format=retorch.channels_last), rw, None, 1, 1)
    close(got, TF.conv2d(tx.float(), tw.float(), None, 1, 1))


# float32 (N, C, H, W, O, kernel, stride, padding, dilation, groups): strided windows on oneDNN,
# strided 1x1 and few channels on retorch's kernels.
F32_CASES = [
    (4, 16, 15, 15, 32, 3, 2, 1, 1, 1),
    (2, 8, 12, 13, 8, 5, 3, 2, 1, 1),
    (2, 16, 11, 11, 16, 3, 2, 1, 2, 1),
    (2, 16, 12, 12, 24, 1, 2, 0, 1, 1),
    (2, 4, 12, 12, 16, 3, 2, 1, 1, 1),
    (2, 16, 12, 12, 16, 3, 2, 1, 1, 2),
]


@pytest.mark.parametrize("case", F32_CASES)
def test_strided_float32_convolutions_match_torch(case):
    n, c, h, w_, o, k, s, p, d, g = case
    rng = np.random.default_rng(7)
    x, w, b = (rng.standard_normal(shape).astype(np.float32)
               for shape in ((n, c, h, w_), (o, c // g, k, k), (o,)))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    rx, rw, rb = (retorch.tensor(a).requires_grad_(True) for a in (x, w, b))
    ty = TF.conv2d(tx, tw, tb, s, p, d, g)
    ry = RF.conv2d(rx, rw, rb, s, p, d, g)
    go = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(go))
    ry.backward(retorch.tensor(go))
    for got, want in ((ry, ty), (rx.grad, tx.grad), (rw.grad, tw.grad), (rb.grad, tb.grad)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4,
                                   atol=1e-4)


THREADS_SCRIPT = r"""
import ctypes, numpy as np, retorch
gomp = ctypes.CDLL("libgomp.so.1")
retorch.set_num_threads(2)
x = retorch.randn(64, 256)
w = np.random.default_rng(0).standard_normal((96, 256)).astype(np.float32)
w_bytes = (w.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)  # bfloat16 rows
for run in (lambda: retorch.mm(x.bfloat16(), retorch.tensor(w).bfloat16().t()),
            lambda: retorch.quantized_linear(x, retorch.tensor(w_bytes), 30, 256)):
    gomp.omp_set_num_threads(1)  # as `import torch` does where torch picks one thread
    run()
    print(gomp.omp_get_max_threads())
"""


@pytest.mark.skipif("avx512_bf16" not in open("/proc/cpuinfo").read(),
                    reason="bfloat16 products run on oneDNN only with AVX-512 BF16")
def test_onednn_products_run_on_retorchs_thread_count():
    """OpenMP's thread count belongs to whoever set it last (PyTorch sets its own on import):
    the bfloat16 products (a bfloat16 mm, a bfloat16 model's linear layer at prefill size) give
    oneDNN retorch's count first, as the convolutions and SGEMM did."""
    import os
    import subprocess
    import sys
    env = dict(os.environ)
    env.pop("RETORCH_ONEDNN", None)
    out = subprocess.run([sys.executable, "-c", THREADS_SCRIPT], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["2", "2"]
