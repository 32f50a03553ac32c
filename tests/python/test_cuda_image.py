"""The CUDA image kernels (upsample_nearest2d and upsample_bilinear2d, adaptive_max_pool2d,
native_group_norm, and their backwards) against torch (on its GPU where it has one) and against
retorch's cpu kernels: values, indices, and the gradients of a random weighted sum of the output
through autograd. Each test also checks that the ops ran on the device (the device fallback
counted no call of them). Skipped without a GPU."""
import numpy as np
import pytest
import torch

import retorch
from test_cuda_ops import fresh_stats, ran_on_device  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")

DEV = "cuda"
TDEV = "cuda" if torch.cuda.is_available() else "cpu"  # the oracle's device
TOL = {"float32": 2e-5, "float64": 1e-11, "float16": 4e-3, "bfloat16": 2e-2}
SIXTEEN = ("float16", "bfloat16")


def rt_tensor(a, dtype, device, grad):
    t = retorch.from_numpy(np.ascontiguousarray(a)).to(getattr(retorch, dtype)).to(device)
    return t.requires_grad_(True) if grad else t


def torch_tensor(a, dtype, grad):
    """The oracle's input: a's values rounded to dtype, computed in float64 (float64) or
    float32 (the others), as the kernels compute."""
    t = torch.from_numpy(np.ascontiguousarray(a)).to(getattr(torch, dtype))
    t = t.to(torch.float64 if dtype == "float64" else torch.float32).to(TDEV)
    return t.requires_grad_(True) if grad else t


def rt_host(t):
    return torch.from_numpy(t.detach().cpu().to(retorch.float64).numpy())


def torch_host(t, dtype):
    return t.detach().to(getattr(torch, dtype)).cpu().to(torch.float64)


def close(got, want, tol, what):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    scale = max(1.0, float(want.abs().nan_to_num(0.0).max())) if want.numel() else 1.0
    assert torch.allclose(got, want, rtol=tol, atol=tol * scale, equal_nan=True), \
        (what, float((got - want).abs().nan_to_num(0.0).max()))


def compare(fn, arrays, dtype, grad=True, prep=lambda x: x, seed=0):
    """fn(F, *inputs) with F retorch's or torch's nn.functional, on retorch's cuda and cpu and
    on torch; prep(first input) makes it (e.g.) non-contiguous. Returns the cuda output."""
    F, G = retorch.nn.functional, torch.nn.functional
    tol = TOL[dtype]
    leaves = {"dev": [rt_tensor(a, dtype, DEV, grad) for a in arrays],
              "host": [rt_tensor(a, dtype, "cpu", grad) for a in arrays],
              "torch": [torch_tensor(a, dtype, grad) for a in arrays]}
    outs = {k: fn(G if k == "torch" else F, prep(v[0]), *v[1:]) for k, v in leaves.items()}
    got = rt_host(outs["dev"])
    assert outs["dev"].device.type == DEV
    close(got, rt_host(outs["host"]), tol, "value vs retorch cpu")
    close(got, torch_host(outs["torch"], dtype), tol, "value vs torch")
    if grad:
        w = np.random.default_rng(seed + 100).standard_normal(tuple(outs["dev"].shape))
        (outs["dev"] * rt_tensor(w, dtype, DEV, False)).sum().backward()
        (outs["host"] * rt_tensor(w, dtype, "cpu", False)).sum().backward()
        (outs["torch"] * torch_tensor(w, dtype, False)).sum().backward()
        for k, leaf in enumerate(leaves["dev"]):
            g = rt_host(leaf.grad)
            close(g, rt_host(leaves["host"][k].grad), 4 * tol, f"grad {k} vs retorch cpu")
            if dtype not in SIXTEEN:  # 16-bit gradients round differently from a float32 oracle
                close(g, torch_host(leaves["torch"][k].grad, dtype), 4 * tol, f"grad {k} vs torch")
    return outs["dev"]


def randn(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


# (size, scale_factor): odd ratios, exactly 2x, given non-integer scales, downsampling, the same
# size, and mixed directions.
RESIZES = [((9, 13), None), (None, 2), (None, (1.5, 2.7)), ((3, 2), None), ((5, 7), None),
           (None, (0.6, 1.3)), ((1, 1), None)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("size,scale", RESIZES)
def test_upsample_nearest_values_and_gradients(size, scale, dtype):
    def fn(F, x):
        return F.interpolate(x, size=size, scale_factor=scale, mode="nearest")
    compare(fn, [randn((2, 3, 5, 7), 1)], dtype, grad=True)
    assert ran_on_device("aten::upsample_nearest2d")
    assert ran_on_device("aten::upsample_nearest2d_backward")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size,scale", RESIZES)
def test_upsample_bilinear_values_and_gradients(size, scale, align_corners, dtype):
    def fn(F, x):
        return F.interpolate(x, size=size, scale_factor=scale, mode="bilinear",
                             align_corners=align_corners)
    compare(fn, [randn((2, 3, 5, 7), 2)], dtype, grad=True)
    assert ran_on_device("aten::upsample_bilinear2d")
    assert ran_on_device("aten::upsample_bilinear2d_backward")


def test_upsample_of_non_contiguous_and_uint8_inputs():
    for mode, kw in (("nearest", {}), ("bilinear", {"align_corners": False})):
        def fn(F, x):
            return F.interpolate(x, size=(11, 6), mode=mode, **kw)
        compare(fn, [randn((2, 3, 7, 5), 3)], "float32", prep=lambda x: x.transpose(2, 3))
    assert ran_on_device("aten::upsample_nearest2d")
    assert ran_on_device("aten::upsample_bilinear2d")
    a = np.random.default_rng(4).integers(0, 255, (1, 2, 3, 4)).astype(np.uint8)
    got = retorch.nn.functional.interpolate(retorch.from_numpy(a).to(DEV), size=(7, 9))
    want = torch.nn.functional.interpolate(torch.from_numpy(a), size=(7, 9))
    assert got.dtype == retorch.uint8
    assert np.array_equal(got.cpu().numpy(), want.numpy())
    assert ran_on_device("aten::upsample_nearest2d")


# (input shape, output size): windows that divide, that don't, outputs larger than the input
# (overlapping windows: a maximum shared by several outputs), one output, 3-d inputs.
POOLS = [((2, 3, 8, 6), (4, 3)), ((2, 3, 7, 9), (3, 4)), ((2, 3, 5, 5), (7, 8)),
         ((1, 2, 8, 8), (1, 1)), ((3, 10, 6), (4, 4)), ((4, 5, 5), (2, 3))]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("shape,out", POOLS)
def test_adaptive_max_pool_values_indices_and_gradients(shape, out, dtype):
    compare(lambda F, x: F.adaptive_max_pool2d(x, out), [randn(shape, 5)], dtype, grad=True)
    a = randn(shape, 5)
    _, idx = retorch.nn.functional.adaptive_max_pool2d(rt_tensor(a, dtype, DEV, False), out,
                                                       return_indices=True)
    _, cidx = retorch.nn.functional.adaptive_max_pool2d(rt_tensor(a, dtype, "cpu", False), out,
                                                        return_indices=True)
    _, tidx = torch.nn.functional.adaptive_max_pool2d(torch.from_numpy(a).to(getattr(torch, dtype))
                                                      .float(), out, return_indices=True)
    assert idx.dtype == retorch.int64
    assert np.array_equal(idx.cpu().numpy(), cidx.numpy())
    assert np.array_equal(idx.cpu().numpy(), tidx.numpy())  # ties: the first maximum wins
    assert ran_on_device("aten::adaptive_max_pool2d")
    assert ran_on_device("aten::adaptive_max_pool2d_backward")


def test_adaptive_max_pool_nan_ties_and_non_contiguous_input():
    a = np.round(randn((2, 3, 9, 7), 6))  # many ties: the first maximum wins
    a[0, 0, 1, 2] = np.nan
    a[1, 2, 5, :] = np.nan
    for prep in (lambda x: x, lambda x: x.transpose(2, 3)):
        x = prep(retorch.from_numpy(a).to(DEV))
        t = prep(torch.from_numpy(a))
        got, idx = retorch.nn.functional.adaptive_max_pool2d(x, (4, 3), return_indices=True)
        want, tidx = torch.nn.functional.adaptive_max_pool2d(t, (4, 3), return_indices=True)
        close(rt_host(got), want, 0, "values")
        assert np.array_equal(idx.cpu().numpy(), tidx.numpy())
    compare(lambda F, x: F.adaptive_max_pool2d(x, (3, 5)), [randn((2, 3, 9, 7), 7)], "float64",
            prep=lambda x: x.transpose(2, 3))
    assert ran_on_device("aten::adaptive_max_pool2d")
    assert ran_on_device("aten::adaptive_max_pool2d_backward")


# (input shape, groups): 4-d, 3-d and 2-d inputs; one group, a channel per group, and between.
GROUPS = [((2, 6, 5, 4), 1), ((2, 6, 5, 4), 3), ((2, 6, 5, 4), 6), ((3, 4, 10), 2),
          ((4, 6), 3), ((1, 8, 33, 9), 4)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("affine", ["none", "weight", "weight_bias"])
@pytest.mark.parametrize("shape,groups", GROUPS)
def test_group_norm_values_and_gradients(shape, groups, affine, dtype):
    c = shape[1]
    arrays = [randn(shape, 8) * 2 + 0.5]
    if affine != "none":
        arrays.append(randn((c,), 9))
    if affine == "weight_bias":
        arrays.append(randn((c,), 10))

    def fn(F, x, w=None, b=None):
        return F.group_norm(x, groups, w, b, 1e-5)
    compare(fn, arrays, dtype, grad=True)
    assert ran_on_device("aten::native_group_norm")
    assert ran_on_device("aten::_group_norm_backward")


def test_native_group_norm_of_a_non_contiguous_input():
    a, w, b = randn((2, 6, 4, 5), 11), randn((6,), 12), randn((6,), 13)
    x = retorch.from_numpy(a).to(DEV).transpose(2, 3)
    rw, rb = retorch.from_numpy(w).to(DEV), retorch.from_numpy(b).to(DEV)
    out, mean, rstd = retorch.native_group_norm(x, rw, rb, 2, 6, 20, 3, 1e-5)
    want = torch.nn.functional.group_norm(torch.from_numpy(a).transpose(2, 3), 3,
                                          torch.from_numpy(w), torch.from_numpy(b), 1e-5)
    close(rt_host(out), want, 1e-11, "value")
    rows = torch.from_numpy(a).transpose(2, 3).reshape(2, 3, -1)
    close(rt_host(mean), rows.mean(-1), 1e-11, "mean")
    close(rt_host(rstd), (rows.var(-1, unbiased=False) + 1e-5).rsqrt(), 1e-11, "rstd")
    assert tuple(mean.shape) == (2, 3) and tuple(rstd.shape) == (2, 3)
    assert ran_on_device("aten::native_group_norm")


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
                                  "adaptive_max_pool2d", "batch_norm"])
def test_channels_last_pools_and_batch_norm_run_on_nchw_copies(name):
    """Note [Channels-last through NCHW]: channels-last inputs run the NCHW kernels on device
    copies; the results and gradients are torch's, channels-last as the cpu gives them."""
    rng = np.random.default_rng(120)
    a = rng.standard_normal((2, 5, 9, 7)).astype(np.float32)
    cl_r, cl_t = retorch.channels_last, torch.channels_last
    x = retorch.tensor(a).to("cuda").contiguous(memory_format=cl_r).requires_grad_(True)
    tx = torch.tensor(a).contiguous(memory_format=cl_t).requires_grad_(True)
    F, G = retorch.nn.functional, torch.nn.functional
    calls = {"max_pool2d": (lambda f, t: f.max_pool2d(t, 3, 2, 1), "max_pool2d_with_indices"),
             "avg_pool2d": (lambda f, t: f.avg_pool2d(t, 2), "avg_pool2d"),
             "adaptive_avg_pool2d": (lambda f, t: f.adaptive_avg_pool2d(t, (4, 3)),
                                     "adaptive_avg_pool2d"),
             "adaptive_max_pool2d": (lambda f, t: f.adaptive_max_pool2d(t, (4, 3)),
                                     "adaptive_max_pool2d"),
             "batch_norm": (lambda f, t: f.batch_norm(t, None, None, training=True),
                            "native_batch_norm")}
    call, op = calls[name]
    got, want = call(F, x), call(G, tx)
    assert got.device.type == "cuda" and got.is_contiguous(memory_format=cl_r)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    g = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    (got * retorch.tensor(g).to("cuda")).sum().backward()
    (want * torch.tensor(g)).sum().backward()
    assert x.grad.is_contiguous(memory_format=cl_r)
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert ran_on_device(f"aten::{op}")
    if name == "max_pool2d":
        got, idx = F.max_pool2d(x.detach(), 3, 2, 1, return_indices=True)
        _, tidx = G.max_pool2d(tx.detach(), 3, 2, 1, return_indices=True)
        assert idx.is_contiguous(memory_format=cl_r) and (idx.cpu().numpy() == tidx.numpy()).all()
