"""The 3-d layers (nn/_functional_3d.py, nn/modules/volumetric.py) against torch.nn: values and
gradients of conv3d, conv_transpose3d, the 3-d pools and 5-D interpolation in float64 and
float32 over a grid of settings, the modules' parameters, init, reprs and outputs, and errors."""
import warnings

import numpy as np
import pytest
import torch

import retorch

TOL = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-5)}


def _data(shape, dtype, seed):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


def run_both(fn, arrays, dtype, grads=True):
    """fn(lib, *tensors) on torch and retorch from the same arrays; each result lists the
    outputs, then (if grads) the gradients of sum(first output * fixed weights) with respect
    to every floating array."""
    results = []
    for m in (torch, retorch):
        ts = [m.tensor(a.copy(), requires_grad=grads and a.dtype.kind == "f") for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's 'same'-padding copy warning
            out = fn(m, *ts)
        outs = list(out) if isinstance(out, tuple) else [out]
        res = [o.detach().numpy() for o in outs]
        if grads:
            probe = _data(tuple(outs[0].shape), dtype, 99)
            (outs[0] * m.tensor(probe)).sum().backward()
            res += [t.grad.numpy() for t in ts if t.requires_grad]
        results.append(res)
    return results


def assert_match(fn, arrays, dtype, grads=True):
    want, got = run_both(fn, arrays, dtype, grads)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"result {i}: shape {g.shape} != torch's {w.shape}"
        assert g.dtype == w.dtype, f"result {i}: dtype {g.dtype} != torch's {w.dtype}"
        np.testing.assert_allclose(g, w, err_msg=f"result {i}", **TOL[dtype])


DTYPES = ["float64", "float32"]

# (input shape, weight shape, stride, padding, dilation, groups, bias)
CONV3D = [
    ((2, 3, 5, 6, 7), (4, 3, 3, 3, 3), 1, 0, 1, 1, True),
    ((2, 4, 7, 6, 5), (6, 2, 3, 2, 3), (2, 1, 2), (1, 0, 1), (1, 2, 1), 2, True),
    ((1, 3, 9, 8, 7), (2, 3, 2, 3, 2), (3, 2, 1), 2, 1, 1, False),
    ((2, 4, 6, 6, 6), (4, 1, 3, 3, 3), 1, "same", (2, 1, 2), 4, True),
    ((2, 2, 5, 6, 5), (3, 2, 2, 4, 1), 1, "same", 1, 1, True),
    ((1, 2, 5, 5, 5), (3, 2, 3, 1, 2), 1, "valid", 1, 1, True),
    ((5, 3, 6, 7), (4, 5, 2, 3, 3), (1, 2, 2), (0, 1, 1), 1, 1, True),
    ((2, 3, 4, 5, 6), (5, 3, 1, 1, 1), 1, 0, 1, 1, True),
    ((1, 6, 5, 9, 4), (6, 2, 2, 3, 2), 2, 1, (2, 1, 1), 3, False),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(CONV3D)))
def test_conv3d_matches_torch(case, dtype):
    xs, ws, s, p, d, g, bias = CONV3D[case]
    arrays = [_data(xs, dtype, 1), _data(ws, dtype, 2)] + ([_data(ws[:1], dtype, 3)] if bias
                                                           else [])
    assert_match(lambda m, x, w, *b: m.nn.functional.conv3d(x, w, b[0] if b else None, s, p, d,
                                                            g), arrays, dtype)


# (input shape, weight shape, stride, padding, output_padding, groups, dilation, bias)
CONV_T3D = [
    ((2, 3, 4, 5, 3), (3, 4, 3, 3, 3), 1, 0, 0, 1, 1, True),
    ((2, 4, 3, 4, 5), (4, 3, 3, 2, 3), (2, 1, 3), (1, 0, 1), (1, 0, 2), 2, (1, 2, 1), True),
    ((1, 4, 4, 3, 3), (4, 3, 3, 3, 2), (1, 2, 1), (2, 0, 1), (1, 1, 0), 2, (2, 1, 1), False),
    ((3, 4, 3, 5), (3, 2, 2, 2, 3), 2, 1, 1, 1, 1, True),
    ((2, 2, 3, 3, 3), (2, 2, 2, 2, 2), 2, 0, 0, 1, 1, True),
    ((1, 6, 3, 4, 3), (6, 1, 3, 3, 3), (2, 2, 1), (3, 1, 1), (1, 1, 0), 6, (3, 1, 2), True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(CONV_T3D)))
def test_conv_transpose3d_matches_torch(case, dtype):
    xs, ws, s, p, op, g, d, bias = CONV_T3D[case]
    arrays = [_data(xs, dtype, 4), _data(ws, dtype, 5)] + (
        [_data((ws[1] * g,), dtype, 6)] if bias else [])
    assert_match(lambda m, x, w, *b: m.nn.functional.conv_transpose3d(
        x, w, b[0] if b else None, s, p, op, g, d), arrays, dtype)


# (kernel_size, stride, padding, dilation, ceil_mode) over a (2, 3, 7, 8, 9) input
MAX_POOL = [
    (2, None, 0, 1, False),
    (3, 2, 1, 1, True),
    ((3, 2, 2), (2, 1, 2), (1, 1, 0), (1, 2, 1), True),
    ((2, 3, 2), (3, 2, 2), (1, 1, 1), 1, False),
    (2, 3, 0, 2, True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(MAX_POOL)))
def test_max_pool3d_and_its_flat_indices_match_torch(case, dtype):
    k, s, p, d, ceil = MAX_POOL[case]
    x = _data((2, 3, 7, 8, 9), dtype, 7)
    assert_match(lambda m, t: m.nn.functional.max_pool3d(t, k, s, p, d, ceil, True), [x], dtype)
    assert_match(lambda m, t: m.nn.functional.max_pool3d(t[0], k, s, p, d, ceil), [x], dtype)


@pytest.mark.parametrize("case", range(len(MAX_POOL)))
def test_max_pools_pick_torchs_element_among_ties_and_propagate_nan(case):
    k, s, p, d, ceil = MAX_POOL[case]
    x = np.random.RandomState(17).randint(0, 3, (2, 3, 7, 8, 9)).astype(np.float64)
    x[0, 1, 2, 3, 4] = x[1, 2, 6, 7, 8] = np.nan
    assert_match(lambda m, t: m.nn.functional.max_pool3d(t, k, s, p, d, ceil, True), [x],
                 "float64", grads=False)
    assert_match(lambda m, t: m.nn.functional.adaptive_max_pool3d(t, (3, 5, 4), True), [x],
                 "float64", grads=False)


# (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_POOL = [
    (2, None, 0, False, True, None),
    (3, 2, 1, True, True, None),
    (3, 2, 1, True, False, None),
    ((3, 2, 2), (2, 1, 2), (1, 1, 0), False, False, None),
    ((2, 3, 2), 2, (1, 1, 1), True, True, 5),
    (2, (1, 2, 3), 0, False, True, 3),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(AVG_POOL)))
def test_avg_pool3d_matches_torch(case, dtype):
    k, s, p, ceil, cip, div = AVG_POOL[case]
    x = _data((2, 3, 7, 8, 9), dtype, 8)
    assert_match(lambda m, t: m.nn.functional.avg_pool3d(t, k, s, p, ceil, cip, div), [x], dtype)
    assert_match(lambda m, t: m.nn.functional.avg_pool3d(t[1], k, s, p, ceil, cip, div), [x],
                 dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [2, (3, None, 4), (7, 1, 5), (4, 6, 9), (1, 1, 1)])
def test_adaptive_pools_match_torch(size, dtype):
    x = _data((2, 3, 7, 6, 9), dtype, 9)
    assert_match(lambda m, t: m.nn.functional.adaptive_avg_pool3d(t, size), [x], dtype)
    assert_match(lambda m, t: m.nn.functional.adaptive_max_pool3d(t, size, True), [x], dtype)
    assert_match(lambda m, t: m.nn.functional.adaptive_max_pool3d(t[0], size), [x], dtype)


INTERP = [dict(scale_factor=2), dict(scale_factor=1.7), dict(size=(5, 9, 4)), dict(size=3),
          dict(scale_factor=(0.6, 1.3, 2.1), recompute_scale_factor=True),
          dict(scale_factor=(0.5, 1.0, 2.5))]
MODES = [("nearest", None), ("nearest-exact", None), ("trilinear", False), ("trilinear", True),
         ("area", None)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", range(len(MODES)))
@pytest.mark.parametrize("kw", range(len(INTERP)))
def test_interpolate_5d_matches_torch(kw, mode, dtype):
    name, corners = MODES[mode]
    x = _data((2, 3, 4, 5, 3), dtype, 10)
    assert_match(lambda m, t: m.nn.functional.interpolate(t, mode=name, align_corners=corners,
                                                          **INTERP[kw]), [x], dtype)


def _copy_params(src, dst):
    for p, q in zip(src.parameters(), dst.parameters()):
        with retorch.no_grad():
            q.copy_(retorch.tensor(p.detach().numpy()))


def _module_pair(build, dtype, seed=0):
    torch.manual_seed(seed)
    t = build(torch).to(getattr(torch, dtype))
    r = build(retorch).to(getattr(retorch, dtype))
    _copy_params(t, r)
    return t, r


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module_padding_modes_match_torch(padding_mode, dtype):
    t, r = _module_pair(lambda m: m.nn.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1),
                                              padding=(1, 1, 2), groups=2,
                                              padding_mode=padding_mode), dtype)
    x = _data((2, 4, 5, 6, 7), dtype, 11)
    outs = []
    for mod, m in ((t, torch), (r, retorch)):
        xt = m.tensor(x.copy(), requires_grad=True)
        y = mod(xt)
        (y * m.tensor(_data(tuple(y.shape), dtype, 12))).sum().backward()
        outs.append([y.detach().numpy(), xt.grad.numpy(), mod.weight.grad.numpy(),
                     mod.bias.grad.numpy()])
    for i, (g, w) in enumerate(zip(outs[1], outs[0])):
        np.testing.assert_allclose(g, w, err_msg=f"{padding_mode} result {i}", **TOL[dtype])


def test_conv3d_module_same_padding_and_unbatched_input():
    t, r = _module_pair(lambda m: m.nn.Conv3d(3, 2, (2, 3, 4), padding="same", dilation=(1, 2, 1),
                                              padding_mode="reflect"), "float64")
    x = _data((3, 5, 6, 7), "float64", 13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = t(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(r(retorch.tensor(x)).detach().numpy(), want, **TOL["float64"])


def test_conv_transpose3d_module_output_size_matches_torch():
    t, r = _module_pair(lambda m: m.nn.ConvTranspose3d(4, 6, 3, stride=(2, 3, 2), padding=1,
                                                       groups=2), "float64")
    x = _data((2, 4, 3, 4, 3), "float64", 14)
    for size in (None, (6, 10, 5), (2, 6, 6, 11, 6)):
        want = t(torch.tensor(x), output_size=size).detach().numpy()
        got = r(retorch.tensor(x), output_size=size).detach().numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **TOL["float64"])
    with pytest.raises(ValueError, match="requested an output size"):
        r(retorch.tensor(x), output_size=(9, 10, 5))


MODULES = [
    lambda m: m.nn.Conv3d(4, 8, 3),
    lambda m: m.nn.Conv3d(6, 4, (3, 2, 1), stride=2, padding=1, dilation=(1, 2, 1), groups=2,
                          bias=False, padding_mode="replicate"),
    lambda m: m.nn.Conv3d(2, 4, 3, padding="same"),
    lambda m: m.nn.ConvTranspose3d(4, 6, (2, 3, 3), stride=2, output_padding=1, groups=2,
                                   dilation=(1, 2, 1)),
    lambda m: m.nn.ConvTranspose3d(3, 5, 2, bias=False),
    lambda m: m.nn.MaxPool3d(3, 2, 1, ceil_mode=True),
    lambda m: m.nn.MaxPool3d((2, 1, 2), return_indices=True),
    lambda m: m.nn.AvgPool3d(3, 2, 1),
    lambda m: m.nn.AvgPool3d((2, 3, 3), ceil_mode=True, count_include_pad=False),
    lambda m: m.nn.AdaptiveAvgPool3d((2, None, 3)),
    lambda m: m.nn.AdaptiveMaxPool3d(2, return_indices=True),
    lambda m: m.nn.BatchNorm3d(4),
    lambda m: m.nn.BatchNorm3d(4, momentum=None, affine=False),
    lambda m: m.nn.InstanceNorm3d(4, affine=True),
    lambda m: m.nn.InstanceNorm3d(4, track_running_stats=True),
    lambda m: m.nn.Upsample(scale_factor=2, mode="trilinear"),
    lambda m: m.nn.Upsample(size=(3, 5, 7), mode="nearest"),
]


@pytest.mark.parametrize("case", range(len(MODULES)))
def test_modules_match_torch_in_repr_parameters_and_output(case):
    t, r = _module_pair(MODULES[case], "float64")
    assert repr(r) == repr(t)
    assert [(n, tuple(p.shape)) for n, p in r.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    c = 4 if "Conv" not in repr(t) else t.in_channels
    x = _data((2, c, 5, 6, 7), "float64", 15)
    for train in (True, False):  # twice: batch norm's running statistics move
        t.train(train)
        r.train(train)
        want, got = t(torch.tensor(x)), r(retorch.tensor(x))
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), **TOL["float64"])
    for name, buf in t.named_buffers():
        np.testing.assert_allclose(dict(r.named_buffers())[name].numpy(), buf.numpy(),
                                   **TOL["float64"])


@pytest.mark.parametrize("build", [lambda m: m.nn.Conv3d(6, 8, (3, 2, 4), groups=2),
                                   lambda m: m.nn.ConvTranspose3d(6, 3, (2, 3, 3), groups=3)])
def test_conv_init_is_torchs_kaiming_uniform(build):
    t, r = build(torch), build(retorch)
    fan_in = t.weight[0].numel() if not t.transposed else t.weight.shape[1] * 18
    bound = 1 / np.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)) and the bias's U(-b, b)
    for p in (r.weight, r.bias):
        v = p.detach().numpy()
        assert np.abs(v).max() <= bound + 1e-7
        # Spread over the range, not all near zero; a 3-element bias stays under 0.6 of its
        # bound with probability 0.6^3, so only larger tensors are checked.
        if v.size >= 20:
            assert np.abs(v).max() > 0.6 * bound
    before = r.weight.detach().numpy().copy()
    r.reset_parameters()
    assert not np.allclose(before, r.weight.detach().numpy())


def test_unbatched_norms_and_batch_norm_rank_check():
    x = _data((4, 3, 5, 6), "float64", 16)
    want = torch.nn.InstanceNorm3d(4)(torch.tensor(x)).numpy()
    np.testing.assert_allclose(retorch.nn.InstanceNorm3d(4)(retorch.tensor(x)).numpy(), want,
                               **TOL["float64"])
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        retorch.nn.BatchNorm3d(4)(retorch.tensor(x))


def test_lazy_conv3d_takes_in_channels_from_the_first_input_and_becomes_a_conv3d():
    retorch.manual_seed(0)
    m = retorch.nn.LazyConv3d(4, 3, padding=1)
    assert m.has_uninitialized_params()
    y = m(retorch.randn(2, 3, 4, 5, 6))
    t = torch.nn.Conv3d(3, 4, 3, padding=1)
    assert type(m) is retorch.nn.Conv3d and repr(m) == repr(t)
    assert tuple(m.weight.shape) == tuple(t.weight.shape) and tuple(y.shape) == (2, 4, 4, 5, 6)
    assert np.abs(m.weight.detach().numpy()).max() <= 1 / np.sqrt(81) + 1e-7
    y.sum().backward()
    assert m.weight.grad.shape == m.weight.shape
    lazy = retorch.nn.LazyConv3d(4, 2, groups=2)
    lazy(retorch.randn(6, 3, 3, 3))  # unbatched
    assert tuple(lazy.weight.shape) == (4, 3, 2, 2, 2)


def test_errors_name_the_op_and_the_shapes():
    F = retorch.nn.functional
    z = retorch.zeros
    with pytest.raises(RuntimeError, match=r"input to conv3d, but got input of size: \[2, 3, 4\]"):
        F.conv3d(z(2, 3, 4), z(2, 3, 1, 1, 1))
    with pytest.raises(RuntimeError, match=r"conv3d: given groups=2, weight of size "
                                           r"\[4, 3, 2, 2, 2\] expects input of size "
                                           r"\[1, 5, 4, 4, 4\] to have 6 channels"):
        F.conv3d(z(1, 5, 4, 4, 4), z(4, 3, 2, 2, 2), groups=2)
    with pytest.raises(RuntimeError, match=r"conv3d: .*divisible by 2 at dimension 0.*"
                                           r"\[5, 3, 2, 2, 2\]"):
        F.conv3d(z(1, 6, 4, 4, 4), z(5, 3, 2, 2, 2), groups=2)
    with pytest.raises(RuntimeError, match=r"conv3d: expected a 5-D weight.*\[4, 3, 2, 2\]"):
        F.conv3d(z(1, 3, 4, 4, 4), z(4, 3, 2, 2))
    with pytest.raises(RuntimeError, match=r"conv3d: padded input of size \(2 x 4 x 4\) is "
                                           r"smaller than the dilated kernel \(3 x 2 x 2\)"):
        F.conv3d(z(1, 6, 2, 4, 4), z(4, 3, 3, 2, 2), groups=2)
    with pytest.raises(RuntimeError, match="not supported for strided convolutions"):
        F.conv3d(z(1, 3, 4, 4, 4), z(4, 3, 3, 3, 3), padding="same", stride=2)
    with pytest.raises(RuntimeError, match="conv_transpose3d: given groups=1.*to have 4 channels"):
        F.conv_transpose3d(z(1, 6, 4, 4, 4), z(4, 3, 3, 3, 3))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride"):
        F.conv_transpose3d(z(1, 4, 4, 4, 4), z(4, 3, 3, 3, 3), stride=2, output_padding=2)
    with pytest.raises(RuntimeError,
                       match=r"non-empty 4D or 5D \(batch mode\) tensor expected for input"):
        F.max_pool3d(z(4, 4, 4), 2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool3d(z(1, 4, 4, 4), 3, padding=2)
    with pytest.raises(RuntimeError, match=r"input image \(T: 2 H: 4 W: 4\) smaller than kernel "
                                           r"size \(kT: 3 kH: 3 kW: 3\)"):
        F.avg_pool3d(z(1, 1, 2, 4, 4), 3)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool3d(z(1, 4, 4, 4), 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="adaptive_avg_pool3d, but got input of size"):
        F.adaptive_avg_pool3d(z(4, 4, 4), 2)
    with pytest.raises(ValueError, match="same number of spatial dimensions"):
        F.interpolate(z(1, 1, 4, 4, 4), size=(3, 3))
    with pytest.raises(NotImplementedError, match="Got 5D input, but bilinear mode needs 4D"):
        F.interpolate(z(1, 1, 4, 4, 4), scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="Anti-alias option is only supported"):
        F.interpolate(z(1, 1, 4, 4, 4), scale_factor=2, mode="trilinear", antialias=True)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(z(1, 1, 4, 4, 4), scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        retorch.nn.Conv3d(5, 4, 3, groups=2)
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        retorch.nn.ConvTranspose3d(4, 4, 3, padding_mode="reflect")
