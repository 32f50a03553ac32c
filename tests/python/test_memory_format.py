"""Channels-last memory format against torch: the format objects, is_contiguous / contiguous /
to / empty / empty_like / clone with memory_format=, layout propagation through elementwise ops
and convolution, and the NHWC pooling and batch-norm kernels (values, gradients, strides)."""
import pickle

import numpy as np
import pytest
import torch

import retorch

CL, RCL = torch.channels_last, retorch.channels_last
CF, RCF = torch.contiguous_format, retorch.contiguous_format
# Odd shapes exercise PyTorch's rules for size-1 dims (N=1, C=1, H=1, W=1).
SHAPES = [(2, 3, 9, 8), (1, 5, 7, 6), (2, 1, 5, 5), (2, 4, 1, 6), (3, 2, 6, 1), (4, 6, 1, 1)]


def pair(shape, channels_last=True, dtype=torch.float32, seed=0, scale=1.0, shift=0.0):
    """The same random values as a torch and a retorch tensor, both laid out channels-last."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, generator=g, dtype=dtype) * scale + shift
    r = retorch.from_numpy(t.numpy().copy()) if t.numel() else retorch.empty(*shape)
    if channels_last:
        t, r = t.contiguous(memory_format=CL), r.contiguous(memory_format=RCL)
    return t, r


def same_layout(r, t, what=""):
    assert tuple(r.shape) == tuple(t.shape), what
    assert tuple(r.stride()) == t.stride(), f"{what}: strides {r.stride()} vs torch {t.stride()}"
    assert r.is_contiguous() == t.is_contiguous(), what
    if t.dim() == 4:
        assert r.is_contiguous(memory_format=RCL) == t.is_contiguous(memory_format=CL), what


def same(r, t, what="", atol=1e-5, rtol=1e-5):
    same_layout(r, t, what)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), atol=atol, rtol=rtol,
                               err_msg=what)


def backward_both(yt, yr, seed=1):
    g = torch.randn(yt.shape, generator=torch.Generator().manual_seed(seed))
    yt.backward(g)
    yr.backward(retorch.from_numpy(g.numpy().copy()))


def fwd_bwd(name, t, r, *args, **kwargs):
    """F.<name> of the leaf pair t, r (requires_grad set here): the same values and layout, then
    the same input gradient; returns the outputs."""
    t.requires_grad_()
    r.requires_grad_()
    yt = getattr(torch.nn.functional, name)(t, *args, **kwargs)
    yr = getattr(retorch.nn.functional, name)(r, *args, **kwargs)
    ot, orr = (yt[0], yr[0]) if isinstance(yt, tuple) else (yt, yr)
    same(orr, ot, name)
    backward_both(ot, orr)
    same(r.grad, t.grad, f"{name} grad")
    t.grad, r.grad = None, None
    return yt, yr


# ---------------------------------------------------------------- format objects and methods

def test_format_objects_print_like_torch():
    for r, t in [(RCL, CL), (RCF, CF), (retorch.preserve_format, torch.preserve_format)]:
        assert str(r) == str(t) and repr(r) == repr(t)
    assert RCL == retorch.channels_last and RCL != RCF
    assert hash(RCL) == hash(retorch.channels_last)
    assert pickle.loads(pickle.dumps(RCL)) == RCL
    assert type(RCL).__name__ == "memory_format"


@pytest.mark.parametrize("shape", SHAPES + [(1, 1, 1, 1), (0, 3, 4, 4), (2, 3, 0, 4)])
def test_contiguous_channels_last(shape):
    t, r = pair(shape, channels_last=False)
    same_layout(r, t, "contiguous input")
    same(r.contiguous(memory_format=RCL), t.contiguous(memory_format=CL), "to channels_last")
    tc, rc = t.contiguous(memory_format=CL), r.contiguous(memory_format=RCL)
    same(rc.contiguous(), tc.contiguous(), "back to contiguous")
    same(rc.contiguous(memory_format=RCF), tc.contiguous(memory_format=CF), "contiguous_format")
    assert rc._suggest_memory_format() == (
        RCL if tc.is_contiguous(memory_format=CL) and not tc.is_contiguous() else RCF)


def test_is_contiguous_and_suggested_format_of_views():
    t, r = pair((2, 3, 8, 8), channels_last=False)
    for f in (lambda x: x.permute(0, 2, 3, 1)[:, ::2].permute(0, 3, 1, 2),
              lambda x: x.permute(0, 2, 3, 1).permute(0, 3, 1, 2),
              lambda x: x.transpose(2, 3), lambda x: x[:, :, ::2]):
        tv, rv = f(t), f(r)
        same_layout(rv, tv, "view")
        same(rv.contiguous(memory_format=RCL), tv.contiguous(memory_format=CL), "view to cl")
    # 3-d tensors: never channels-last, and asking for it is an error.
    t3, r3 = pair((2, 3, 4), channels_last=False)
    assert r3.is_contiguous(memory_format=RCL) is False
    for f in (lambda x, cl: x.contiguous(memory_format=cl), lambda x, cl: x.to(memory_format=cl),
              lambda x, cl: x.clone(memory_format=cl)):
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
            f(t3, CL)
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
            f(r3, RCL)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        retorch.empty(2, 3, 4, memory_format=RCL)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        retorch.empty_like(r3, memory_format=RCL)


def test_empty_empty_like_clone_to():
    assert retorch.empty(2, 3, 4, 5, memory_format=RCL).stride() == \
        torch.empty(2, 3, 4, 5, memory_format=CL).stride()
    assert retorch.empty((2, 3, 4, 5), memory_format=RCL, dtype=retorch.float64).stride() == \
        torch.empty((2, 3, 4, 5), memory_format=CL).stride()
    t, r = pair((2, 3, 6, 5))
    for fmt_t, fmt_r in [(torch.preserve_format, retorch.preserve_format), (CF, RCF), (CL, RCL)]:
        same_layout(retorch.empty_like(r, memory_format=fmt_r),
                    torch.empty_like(t, memory_format=fmt_t), f"empty_like {fmt_t}")
        same(r.clone(memory_format=fmt_r), t.clone(memory_format=fmt_t), f"clone {fmt_t}")
        same(retorch.clone(r, memory_format=fmt_r), torch.clone(t, memory_format=fmt_t), "clone")
    # preserve_format (the default) keeps channels-last and dense permuted strides.
    same_layout(retorch.empty_like(r), torch.empty_like(t), "empty_like default")
    same(r.clone(), t.clone(), "clone default")
    tt, rt = pair((2, 3, 6, 5), channels_last=False)
    same(rt.transpose(2, 3).clone(), tt.transpose(2, 3).clone(), "clone of transposed")
    same(rt[:, :, ::2].clone(), tt[:, :, ::2].clone(), "clone of non-dense")
    # to(): memory_format alone, with a dtype, with a device, and preserved by conversions.
    same(rt.to(memory_format=RCL), tt.to(memory_format=CL), "to(memory_format)")
    same(rt.to(retorch.float64, memory_format=RCL), tt.to(torch.float64, memory_format=CL),
         "to(dtype, memory_format)", atol=1e-6)
    same(rt.to("cpu", retorch.float64, memory_format=RCL),
         tt.to("cpu", torch.float64, memory_format=CL), "to(device, dtype, memory_format)")
    same(r.to(dtype=retorch.float64), t.to(dtype=torch.float64), "to(dtype) preserves")
    same(r.double(), t.double(), "double() preserves")
    same(r.to(memory_format=RCF), t.to(memory_format=CF), "to(contiguous_format)")


def test_like_factories_preserve_layout():
    t, r = pair((2, 3, 6, 5))
    tt, rt = pair((2, 3, 6, 5), channels_last=False)
    cases = [("zeros_like", ()), ("ones_like", ()), ("full_like", (2.5,)), ("rand_like", ()),
             ("randn_like", ())]
    for name, args in cases:
        ft, fr = getattr(torch, name), getattr(retorch, name)
        for xt, xr, what in [(t, r, "channels-last"), (tt.transpose(1, 3), rt.transpose(1, 3),
                                                      "permuted"), (tt[:, :, ::2], rt[:, :, ::2],
                                                                     "non-dense")]:
            same_layout(fr(xr, *args), ft(xt, *args), f"{name} {what}")
            same_layout(fr(xr, *args, memory_format=RCF), ft(xt, *args, memory_format=CF),
                        f"{name} {what} contiguous_format")
        same_layout(fr(rt, *args, memory_format=RCL), ft(tt, *args, memory_format=CL),
                    f"{name} channels_last")
        got, want = fr(r, *args, dtype=retorch.float64, requires_grad=True), \
            ft(t, *args, dtype=torch.float64, requires_grad=True)
        same_layout(got, want, f"{name} dtype + requires_grad")
        assert got.requires_grad and got.is_leaf and str(got.dtype) == "torch.float64", name
    same(retorch.full_like(r, 2.5), torch.full_like(t, 2.5), "full_like values")


def test_contiguous_channels_last_gradient():
    t, r = pair((2, 3, 5, 4), channels_last=False)
    t.requires_grad_()
    r.requires_grad_()
    w = torch.randn(2, 3, 5, 4)
    (t.contiguous(memory_format=CL) * w).sum().backward()
    (r.contiguous(memory_format=RCL) * retorch.from_numpy(w.numpy())).sum().backward()
    same(r.grad, t.grad, "grad through contiguous(channels_last)")
    # A channels-last leaf gets a channels-last gradient (PyTorch's AccumulateGrad contract).
    t, r = pair((2, 3, 5, 4))
    t.requires_grad_()
    r.requires_grad_()
    (t * 2).sum().backward()
    (r * 2).sum().backward()
    same(r.grad, t.grad, "leaf grad layout")


def test_module_to_memory_format():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    rm = retorch.nn.Sequential(retorch.nn.Conv2d(3, 4, 3), retorch.nn.BatchNorm2d(4))
    rm.load_state_dict({k: retorch.from_numpy(v.numpy().copy())
                        for k, v in tm.state_dict().items()})
    tm.to(memory_format=CL)
    rm.to(memory_format=RCL)
    for (name, tp), (_, rp) in zip(tm.named_parameters(), rm.named_parameters()):
        same(rp, tp, name)
    assert isinstance(rm[0].weight, retorch.nn.Parameter)
    tm.to(torch.float64, memory_format=CL)
    rm.to(retorch.float64, memory_format=RCL)
    same(rm[0].weight, tm[0].weight, "float64 weight", atol=1e-6)
    t, r = pair((2, 3, 8, 8), dtype=torch.float64)
    same(rm(r), tm(t), "channels-last network", atol=1e-6)


# ---------------------------------------------------------------- layout propagation

@pytest.mark.parametrize("shape", SHAPES)
def test_elementwise_outputs_follow_channels_last(shape):
    t, r = pair(shape)
    tc, rc = pair(shape, channels_last=False, seed=3)
    tb, rb = pair((shape[1], 1, 1), channels_last=False, seed=4)
    cases = [
        (lambda L, x, c, b: L.relu(x)), (lambda L, x, c, b: x + x), (lambda L, x, c, b: x * 2),
        (lambda L, x, c, b: x + c), (lambda L, x, c, b: c + x), (lambda L, x, c, b: x + b),
        (lambda L, x, c, b: L.exp(x)), (lambda L, x, c, b: L.where(x > 0, x, c)),
        (lambda L, x, c, b: x.transpose(2, 3) - 1),
    ]
    for i, f in enumerate(cases):
        same(f(retorch, r, rc, rb), f(torch, t, tc, tb), f"case {i}")


def test_transposed_inputs_keep_their_layout():
    t = torch.randn(3, 4)
    r = retorch.from_numpy(t.numpy().copy())
    same(r.t() + 1, t.t() + 1, "transposed 2-d")
    t4 = torch.randn(2, 3, 4, 5)
    r4 = retorch.from_numpy(t4.numpy().copy())
    same(r4.permute(0, 2, 1, 3).relu(), t4.permute(0, 2, 1, 3).relu(), "permuted 4-d")


@pytest.mark.parametrize("w_cl", [False, True])
@pytest.mark.parametrize("x_cl", [False, True])
def test_conv2d_layout(x_cl, w_cl):
    t, r = pair((2, 3, 8, 7), channels_last=x_cl)
    tw, rw = pair((4, 3, 3, 3), channels_last=w_cl, seed=5)
    t.requires_grad_()
    r.requires_grad_()
    yt = torch.nn.functional.conv2d(t, tw, padding=1)
    yr = retorch.nn.functional.conv2d(r, rw, padding=1)
    same(yr, yt, "conv2d", atol=1e-4)
    same(retorch.nn.functional.conv2d(r, rw, padding="same"),
         torch.nn.functional.conv2d(t, tw, padding="same"), "conv2d same", atol=1e-4)
    backward_both(yt, yr)
    np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), atol=1e-4)


# ---------------------------------------------------------------- pooling kernels

POOL_ARGS = [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
             dict(kernel_size=3, stride=2, ceil_mode=True),
             dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1))]


def pool_cases():
    for shape in SHAPES:
        for args in POOL_ARGS:
            try:
                torch.nn.functional.max_pool2d(torch.zeros(shape), **args)
            except RuntimeError:
                continue  # output too small for this shape in torch as well
            yield shape, args


@pytest.mark.parametrize("shape,args", list(pool_cases()))
def test_max_pool2d_channels_last(shape, args):
    t, r = pair(shape)
    (_, it), (_, ir) = fwd_bwd("max_pool2d", t, r, return_indices=True, dilation=1, **args)
    same(ir, it, "indices (flat h * W + w per plane)")


def test_max_pool2d_channels_last_dilation_nan_and_ties():
    t, r = pair((2, 4, 9, 9))
    t[0, 1, 2, 3] = float("nan")
    r[0, 1, 2, 3] = float("nan")
    t[1, :, 4:6, 4:6] = 1.0  # ties: the first maximum in scan order wins
    r[1, :, 4:6, 4:6] = 1.0
    for args in (dict(kernel_size=3, stride=1, padding=1, dilation=2), dict(kernel_size=2)):
        yt, it = torch.nn.functional.max_pool2d(t, return_indices=True, **args)
        yr, ir = retorch.nn.functional.max_pool2d(r, return_indices=True, **args)
        same(yr, yt, f"max_pool2d {args}")
        same(ir, it, f"indices {args}")


@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_max_pool2d_in_blocks_of_channels(channels_last, dtype):
    # The channels-last loop takes channels 64 at a time and a tail; NCHW inputs (adaptive pools
    # too) run through it in blocks of 64 planes and a tail (Note [NCHW max pool in NHWC
    # blocks]): 70 channels and 2 x 40 planes cover both. NaN, -inf and ties included; indices and values against torch.
    for shape in ((1, 70, 11, 10), (2, 40, 9, 9)):
        t, _ = pair(shape, channels_last=False, seed=7)
        t = t.to(dtype)
        t[0, 3, 2, 3] = float("nan")
        t[0, 3, 5, 6] = float("nan")  # a later NaN in another window of the same plane
        t[0, 5, :, :] = float("-inf")
        t[-1, 65 % shape[1], 4:7, 4:7] = 1.5  # ties: the first maximum in scan order wins
        t[0, 9, :3, :3] = 2.0
        if channels_last:
            t = t.contiguous(memory_format=CL)
        r = retorch.from_numpy(t.float().numpy() if dtype == torch.bfloat16 else t.numpy())
        r = r.to(retorch.bfloat16) if dtype == torch.bfloat16 else r
        if channels_last:
            r = r.contiguous(memory_format=RCL)
        for args in (dict(kernel_size=3, stride=2, padding=1),
                     dict(kernel_size=3, stride=2, ceil_mode=True),
                     dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1))):
            yt, it = torch.nn.functional.max_pool2d(t, return_indices=True, **args)
            yr, ir = retorch.nn.functional.max_pool2d(r, return_indices=True, **args)
            same(yr.float(), yt.float(), f"max_pool2d {shape} {args}", atol=0, rtol=0)
            same(ir, it, f"indices {shape} {args}")
        for size in ((4, 3), (7, 7), 1):  # adaptive windows overlap and vary in size
            yt, it = torch.nn.functional.adaptive_max_pool2d(t, size, return_indices=True)
            yr, ir = retorch.nn.functional.adaptive_max_pool2d(r, size, return_indices=True)
            same(yr.float(), yt.float(), f"adaptive_max_pool2d {shape} {size}", atol=0, rtol=0)
            same(ir, it, f"adaptive indices {shape} {size}")


@pytest.mark.parametrize("shape,args", list(pool_cases()))
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_channels_last(shape, args, count_include_pad):
    t, r = pair(shape)
    fwd_bwd("avg_pool2d", t, r, count_include_pad=count_include_pad, **args)


def test_avg_pool2d_channels_last_divisor_override_and_float64():
    t, r = pair((2, 3, 7, 7), dtype=torch.float64)
    same(retorch.nn.functional.avg_pool2d(r, 3, 2, 1, divisor_override=5),
         torch.nn.functional.avg_pool2d(t, 3, 2, 1, divisor_override=5), "divisor_override")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("out", [(3, 3), (1, 1), (2, 4)])
def test_adaptive_pools_channels_last(shape, out):
    t, r = pair(shape)
    fwd_bwd("adaptive_avg_pool2d", t, r, out)
    (_, it), (_, ir) = fwd_bwd("adaptive_max_pool2d", t, r, out, return_indices=True)
    same(ir, it, "adaptive_max_pool2d indices")


def test_pool_backward_with_contiguous_grad_output():
    # The gradient arrives NCHW while the input is NHWC: the result still follows the input.
    t, r = pair((2, 3, 8, 8))
    t.requires_grad_()
    r.requires_grad_()
    yt = torch.nn.functional.avg_pool2d(t, 2) * torch.ones(2, 3, 4, 4)
    yr = retorch.nn.functional.avg_pool2d(r, 2) * retorch.ones(2, 3, 4, 4)
    backward_both(yt, yr)
    same(r.grad, t.grad, "grad")


# ---------------------------------------------------------------- batch norm

def bn_pair(c, dtype):
    torch.manual_seed(0)
    tb = torch.nn.BatchNorm2d(c).to(dtype)
    with torch.no_grad():
        tb.weight.uniform_(0.5, 1.5)
        tb.bias.uniform_(-1, 1)
        tb.running_mean.uniform_(-1, 1)
        tb.running_var.uniform_(0.5, 2)
    rb = retorch.nn.BatchNorm2d(c).to(retorch.float64 if dtype == torch.float64
                                      else retorch.float32)
    rb.load_state_dict({k: retorch.from_numpy(v.numpy().copy())
                        for k, v in tb.state_dict().items()})
    return tb, rb


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_channels_last(shape, training, dtype):
    tb, rb = bn_pair(shape[1], dtype)
    tb.train(training)
    rb.train(training)
    t, r = pair(shape, dtype=dtype, scale=3.0, shift=1.0)
    t.requires_grad_()
    r.requires_grad_()
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=1e-9, rtol=1e-9)
    yt, yr = tb(t), rb(r)
    same(yr, yt, "batch_norm", **tol)
    backward_both(yt, yr)
    same(r.grad, t.grad, "batch_norm input grad", **tol)
    for name in ("weight", "bias"):
        np.testing.assert_allclose(getattr(rb, name).grad.numpy(),
                                   getattr(tb, name).grad.numpy(), **tol)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(rb, name).numpy(), getattr(tb, name).numpy(), **tol)


def test_batch_norm_channels_last_statistics_precision():
    # Note [One-pass NHWC statistics]: shifted sums in double hold a small variance under a
    # large mean (float32 E[x^2] - E[x]^2 would lose it all); checked against float64 batch stats
    # and torch. A NaN in one channel makes that channel's statistics NaN, and only its.
    t, r = pair((4, 6, 9, 7), shift=1000.0, scale=0.01, seed=3)
    mean = t.double().mean((0, 2, 3)).numpy()
    var = t.double().var((0, 2, 3), unbiased=False).numpy()
    # The output's x * scale + shift in float rounds at ~1e5 * 2^-24 here (torch's own output is
    # off by 0.024 at most: its float mean), so 1e-2 against the float64 normalization.
    y = retorch.nn.functional.batch_norm(r, None, None, training=True, eps=0.0).numpy()
    want = ((t.double().numpy() - mean[None, :, None, None]) /
            np.sqrt(var)[None, :, None, None])
    np.testing.assert_allclose(y, want, atol=1e-2)
    rm, rv = retorch.zeros(6), retorch.ones(6)
    retorch.nn.functional.batch_norm(r, rm, rv, training=True, momentum=1.0)
    np.testing.assert_allclose(rm.numpy(), mean, rtol=1e-6)
    np.testing.assert_allclose(rv.numpy(), var * t[:, 0].numel() / (t[:, 0].numel() - 1),
                               rtol=1e-4)
    a = t.numpy().copy()
    a[1, 2, 3, 4] = np.nan
    r2 = retorch.from_numpy(a).contiguous(memory_format=RCL)
    rm2, rv2 = retorch.zeros(6), retorch.ones(6)
    y2 = retorch.nn.functional.batch_norm(r2, rm2, rv2, training=True, momentum=1.0).numpy()
    assert np.isnan(rm2.numpy()[2]) and np.isnan(rv2.numpy()[2])
    assert np.all(np.isnan(y2[:, 2]))
    others = [c for c in range(6) if c != 2]
    assert np.all(np.isfinite(y2[:, others])) and np.all(np.isfinite(rv2.numpy()[others]))


def test_batch_norm_channels_last_statistics_with_an_outlier_first_row():
    # Note [One-pass NHWC statistics] shifts by the first row; one far outlier there (here 1e5
    # against a spread of 1, on 72 channels: past the 64 a cache-line group holds) takes the
    # second pass around the mean. Checked against float64 statistics.
    t, r = pair((3, 72, 5, 6), shift=2.0, seed=5)
    a = t.permute(0, 2, 3, 1).contiguous().numpy().copy()
    a[0, 0, 0, :] = 1e5  # the first NHWC row
    a[0, 0, 0, 7] = 3.0  # one channel's first value ordinary (its statistics shift by it)
    t = torch.from_numpy(a).permute(0, 3, 1, 2)
    r = retorch.from_numpy(a).permute(0, 3, 1, 2)
    assert r.is_contiguous(memory_format=RCL)
    mean = t.double().mean((0, 2, 3)).numpy()
    var = t.double().var((0, 2, 3), unbiased=True).numpy()
    rm, rv = retorch.zeros(72), retorch.ones(72)
    retorch.nn.functional.batch_norm(r, rm, rv, training=True, momentum=1.0)
    np.testing.assert_allclose(rm.numpy(), mean, rtol=1e-6)
    np.testing.assert_allclose(rv.numpy(), var, rtol=1e-5)
    tm, tv = torch.zeros(72), torch.ones(72)
    want = torch.nn.functional.batch_norm(t, tm, tv, training=True, momentum=1.0)
    got = retorch.nn.functional.batch_norm(r, None, None, training=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-4)


def test_batch_norm_channels_last_double_backward():
    tb, rb = bn_pair(3, torch.float64)
    t, r = pair((2, 3, 4, 5), dtype=torch.float64)
    t.requires_grad_()
    r.requires_grad_()
    (gt,) = torch.autograd.grad((tb(t) ** 2).sum(), t, create_graph=True)
    (gr,) = retorch.autograd.grad((rb(r) ** 2).sum(), r, create_graph=True)
    np.testing.assert_allclose(gr.detach().numpy(), gt.detach().numpy(), atol=1e-8)
    gt.sum().backward()
    gr.sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), atol=1e-8)
