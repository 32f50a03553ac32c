"""python/retorch/_api_gaps3.py (and autograd.Variable) against torch 1.13: values, dtypes,
shapes, strides, errors and gradients."""
import warnings

import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(7)
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def both(a, requires_grad=False):
    a = np.asarray(a)
    return (torch.tensor(a, requires_grad=requires_grad),
            retorch.tensor(a, requires_grad=requires_grad))


def close(r, t, tol=1e-5):
    assert tuple(r.shape) == tuple(t.shape)
    assert str(r.dtype) == str(t.dtype)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def raises_like(fn_t, fn_r):
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(Exception) as er:
        fn_r()
    assert type(er.value) is type(et.value), (er.value, et.value)


# ---------------------------------------------------------------- RNN functions

def rnn_case(fn, layers, bidir, bias, proj=0, I=4, H=5, B=3):
    """Random params (numpy) in torch's flat order and matching zero-free hidden states."""
    dirs = 2 if bidir else 1
    G, Hout = GATES[fn] * H, proj or H
    params = []
    for layer in range(layers):
        for _ in range(dirs):
            layer_in = I if layer == 0 else Hout * dirs
            params += [RNG.randn(G, layer_in), RNG.randn(G, Hout)]
            if bias:
                params += [RNG.randn(G), RNG.randn(G)]
            if proj:
                params += [RNG.randn(Hout, H)]
    params = [(p * 0.4).astype(np.float32) for p in params]
    h0 = RNG.randn(layers * dirs, B, Hout).astype(np.float32)
    c0 = RNG.randn(layers * dirs, B, H).astype(np.float32)
    return params, h0, c0


def run_both(fn, args_np, params, h0, c0, tail, lens=None, batch_first=False):
    """Runs torch.<fn> and retorch.<fn> on the same data; returns their outputs and leaves."""
    results = []
    for m in (torch, retorch):
        x = m.tensor(args_np, requires_grad=True)
        ps = [m.tensor(p, requires_grad=True) for p in params]
        h = m.tensor(h0, requires_grad=True)
        c = m.tensor(c0, requires_grad=True)
        hx = (h, c) if fn == "lstm" else h
        if lens is None:
            out = getattr(m, fn)(x, hx, ps, *tail, batch_first)
        else:
            bs = m.tensor(lens, dtype=m.int64)
            out = getattr(m, fn)(x, bs, hx, ps, *tail)
        results.append((out, [x, h, c] + ps))
    return results


def check_rnn(results, tol=1e-4):
    (out_t, leaves_t), (out_r, leaves_r) = results
    assert isinstance(out_r, tuple) and len(out_r) == len(out_t)
    for a, b in zip(out_r, out_t):
        close(a, b, tol)
        assert tuple(a.stride()) == tuple(b.stride())
    loss_w = [RNG.randn(*o.shape).astype(np.float32) for o in out_t]
    sum(torch.sum(o * torch.tensor(w)) for o, w in zip(out_t, loss_w)).backward()
    sum(retorch.sum(o * retorch.tensor(w)) for o, w in zip(out_r, loss_w)).backward()
    for lr, lt in zip(leaves_r, leaves_t):
        if lt.grad is None:
            assert lr.grad is None or not lr.grad.numpy().any()
        else:
            close(lr.grad, lt.grad, tol)


@pytest.mark.parametrize("fn", list(GATES))
@pytest.mark.parametrize("layers,bidir,bias,batch_first", [
    (1, False, True, False), (2, False, True, True), (1, True, False, False),
    (2, True, True, False), (3, True, False, True)])
def test_rnn_padded(fn, layers, bidir, bias, batch_first):
    params, h0, c0 = rnn_case(fn, layers, bidir, bias)
    x = RNG.randn(3, 6, 4).astype(np.float32) if batch_first else \
        RNG.randn(6, 3, 4).astype(np.float32)
    check_rnn(run_both(fn, x, params, h0, c0, (bias, layers, 0.0, False, bidir),
                       batch_first=batch_first))


@pytest.mark.parametrize("fn", list(GATES))
@pytest.mark.parametrize("layers,bidir,bias", [(1, False, True), (2, True, True),
                                               (2, False, False)])
def test_rnn_packed(fn, layers, bidir, bias):
    params, h0, c0 = rnn_case(fn, layers, bidir, bias)
    lens = [3, 3, 2, 1]  # batch sizes of lengths (4, 3, 2) sorted
    data = RNG.randn(sum(lens), 4).astype(np.float32)
    check_rnn(run_both(fn, data, params, h0, c0, (bias, layers, 0.0, False, bidir), lens=lens))


@pytest.mark.parametrize("bidir", [False, True])
def test_lstm_proj(bidir):
    params, h0, c0 = rnn_case("lstm", 2, bidir, True, proj=2)
    x = RNG.randn(5, 3, 4).astype(np.float32)
    check_rnn(run_both("lstm", x, params, h0, c0, (True, 2, 0.0, False, bidir)))


def test_rnn_keywords_and_train_without_dropout():
    params, h0, c0 = rnn_case("gru", 2, False, True)
    x = RNG.randn(4, 3, 4).astype(np.float32)
    outs = []
    for m in (torch, retorch):
        outs.append(m.gru(input=m.tensor(x), hx=m.tensor(h0), params=[m.tensor(p) for p in params],
                          has_biases=True, num_layers=2, dropout=0.0, train=True,
                          bidirectional=False, batch_first=False))
    for a, b in zip(outs[1], outs[0]):
        close(a, b, 1e-4)


def test_rnn_dropout_train_shapes():
    params, h0, c0 = rnn_case("rnn_tanh", 2, False, True)
    x = retorch.tensor(RNG.randn(4, 3, 4).astype(np.float32))
    out, h = retorch.rnn_tanh(x, retorch.tensor(h0), [retorch.tensor(p) for p in params], True,
                              2, 0.5, True, False, False)
    assert tuple(out.shape) == (4, 3, 5) and tuple(h.shape) == (2, 3, 5)


@pytest.mark.parametrize("case", ["one_hidden", "params", "bidir_odd", "dropout", "input_2d",
                                  "batch_sizes_dtype", "input_size", "dtype", "hx_tensor"])
def test_rnn_errors(case):
    params, h0, c0 = rnn_case("lstm", 2, True, True)
    x = RNG.randn(5, 3, 4).astype(np.float32)

    def call(m):
        ps = [m.tensor(p) for p in params]
        h, c, xi = m.tensor(h0), m.tensor(c0), m.tensor(x)
        if case == "one_hidden":
            return m.lstm(xi, (h,), ps, True, 2, 0.0, False, True, False)
        if case == "params":
            return m.lstm(xi, (h, c), ps[:-1], True, 2, 0.0, False, True, False)
        if case == "bidir_odd":
            return m.lstm(xi, (h[:3], c[:3]), ps, True, 2, 0.0, False, True, False)
        if case == "dropout":
            return m.lstm(xi, (h, c), ps, True, 2, 1.5, True, True, False)
        if case == "input_2d":
            return m.lstm(xi[0], (h[:, 0], c[:, 0]), ps, True, 2, 0.0, False, True, False)
        if case == "batch_sizes_dtype":
            return m.lstm(xi[0], m.tensor([2.0, 1.0]), (h, c), ps, True, 2, 0.0, False, True)
        if case == "input_size":
            return m.lstm(m.tensor(RNG.randn(5, 3, 6).astype(np.float32)), (h, c), ps, True, 2,
                          0.0, False, True, False)
        if case == "dtype":
            return m.lstm(xi.double(), (h, c), ps, True, 2, 0.0, False, True, False)
        return m.lstm(xi, h, ps, True, 2, 0.0, False, True, False)
    raises_like(lambda: call(torch), lambda: call(retorch))


# ---------------------------------------------------------------- as_strided_scatter

def base_views(m, a):
    t = m.tensor(a)
    return {"plain": t, "t": t.t(), "sliced": t[:, ::2], "t_sliced": t.t()[::2],
            "rows": t[1:]}


@pytest.mark.parametrize("view", ["plain", "t", "sliced", "t_sliced", "rows"])
@pytest.mark.parametrize("size,stride,offset", [((2, 2), (1, 2), 1), ((3,), (2,), None),
                                                 ((2, 1), (3, 1), 2)])
def test_as_strided_scatter(view, size, stride, offset):
    a = RNG.randn(4, 6).astype(np.float32)
    src = RNG.randn(*size).astype(np.float32)
    rt = torch.as_strided_scatter(base_views(torch, a)[view], torch.tensor(src), size, stride,
                                  offset)
    rr = retorch.as_strided_scatter(base_views(retorch, a)[view], retorch.tensor(src), size,
                                    stride, offset)
    close(rr, rt, 0)
    assert tuple(rr.stride()) == tuple(rt.stride())
    rm = base_views(retorch, a)[view].as_strided_scatter(retorch.tensor(src), size, stride,
                                                         offset)
    close(rm, rt, 0)


def test_as_strided_scatter_grad_and_dtype():
    a, src = RNG.randn(3, 4).astype(np.float32), RNG.randn(2, 2).astype(np.float32)
    g = np.arange(12, dtype=np.float32).reshape(3, 4)
    (xt, xr), (st, sr) = both(a, True), both(src, True)
    torch.as_strided_scatter(xt, st, (2, 2), (1, 2), 1).backward(torch.tensor(g))
    retorch.as_strided_scatter(xr, sr, (2, 2), (1, 2), 1).backward(retorch.tensor(g))
    close(sr.grad, st.grad, 0)
    # torch 1.13's input gradient leaves the scattered slots uninitialized; they should be 0.
    want = g.copy().reshape(-1)
    want[[1, 2, 3, 4]] = 0
    np.testing.assert_array_equal(xr.grad.numpy().reshape(-1), want)
    ints = np.array([[1, 2], [3, 4]])
    close(retorch.as_strided_scatter(retorch.tensor(a), retorch.tensor(ints), (2, 2), (1, 2)),
          torch.as_strided_scatter(torch.tensor(a), torch.tensor(ints), (2, 2), (1, 2)), 0)


@pytest.mark.parametrize("size,stride,src_shape", [((2, 2), (10, 2), (2, 2)),
                                                   ((2, 2), (1, 2), (3, 2))])
def test_as_strided_scatter_errors(size, stride, src_shape):
    a, src = np.zeros((3, 4), np.float32), np.ones(src_shape, np.float32)
    raises_like(lambda: torch.as_strided_scatter(torch.tensor(a), torch.tensor(src), size,
                                                 stride, 1),
                lambda: retorch.as_strided_scatter(retorch.tensor(a), retorch.tensor(src), size,
                                                   stride, 1))


# ---------------------------------------------------------------- conj_physical

@pytest.mark.parametrize("a", [[1.0, -2.5], [1, -2], [True, False]])
def test_conj_physical(a):
    t, r = both(a)
    close(retorch.conj_physical(r), torch.conj_physical(t), 0)
    close(r.conj_physical(), t.conj_physical(), 0)
    assert (retorch.conj_physical(r) is r) == (torch.conj_physical(t) is t)
    assert (retorch.conj_physical_(r) is r) and (r.conj_physical_() is r)
    ot, orr = torch.empty(2, dtype=t.dtype), retorch.empty(2, dtype=r.dtype)
    assert retorch.conj_physical(r, out=orr) is orr
    close(orr, torch.conj_physical(t, out=ot), 0)


def test_conj_physical_grad():
    (xt, xr) = both([1.0, 2.0], True)
    (torch.conj_physical(xt) * 3).sum().backward()
    (retorch.conj_physical(xr) * 3).sum().backward()
    close(xr.grad, xt.grad, 0)


# ---------------------------------------------------------------- grid_sampler, affine grids

@pytest.mark.parametrize("fn", ["grid_sampler", "grid_sampler_2d"])
@pytest.mark.parametrize("interp,pad,align", [(0, 0, False), (0, 1, True), (1, 0, True),
                                              (1, 1, False)])
def test_grid_sampler(fn, interp, pad, align):
    x = RNG.randn(2, 3, 4, 5).astype(np.float32)
    g = (RNG.rand(2, 3, 2, 2) * 2.4 - 1.2).astype(np.float32)
    (xt, xr), (gt, gr) = both(x, True), both(g, True)
    ot = getattr(torch, fn)(xt, gt, interp, pad, align)
    orr = getattr(retorch, fn)(xr, gr, interp, pad, align)
    close(orr, ot)
    w = RNG.randn(*ot.shape).astype(np.float32)
    (ot * torch.tensor(w)).sum().backward()
    (orr * retorch.tensor(w)).sum().backward()
    close(xr.grad, xt.grad, 1e-4)
    if interp == 0:
        close(gr.grad, gt.grad, 1e-4)


@pytest.mark.parametrize("case", ["2d_on_5d", "3d_on_4d", "align_none"])
def test_grid_sampler_errors(case):
    def call(m):
        x4, g4 = m.zeros(1, 1, 2, 2), m.zeros(1, 2, 2, 2)
        x5, g5 = m.zeros(1, 1, 2, 2, 2), m.zeros(1, 2, 2, 2, 3)
        if case == "2d_on_5d":
            return m.grid_sampler_2d(x5, g5, 0, 0, False)
        if case == "3d_on_4d":
            return m.grid_sampler_3d(x4, g4, 0, 0, False)
        return m.grid_sampler_2d(x4, g4, 0, 0, None)
    raises_like(lambda: call(torch), lambda: call(retorch))


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_generator(align):
    theta = RNG.randn(2, 2, 3).astype(np.float32)
    tt, tr = both(theta, True)
    gt = torch.affine_grid_generator(tt, [2, 3, 4, 5], align)
    gr = retorch.affine_grid_generator(tr, [2, 3, 4, 5], align)
    close(gr, gt)
    assert tuple(gr.stride()) == tuple(gt.stride())
    w = RNG.randn(*gt.shape).astype(np.float32)
    (gt * torch.tensor(w)).sum().backward()
    (gr * retorch.tensor(w)).sum().backward()
    close(tr.grad, tt.grad, 1e-4)
    close(retorch.affine_grid_generator(theta=tr, size=[2, 1, 3, 3], align_corners=align),
          torch.affine_grid_generator(theta=tt, size=[2, 1, 3, 3], align_corners=align))


@pytest.mark.parametrize("theta_shape,size,align", [((2, 3, 3), [2, 3, 4, 5], False),
                                                    ((2, 2, 3), [2, 3, 4], False),
                                                    ((2, 2, 3), [2, 3, 4, 5], None)])
def test_affine_grid_generator_errors(theta_shape, size, align):
    th = np.zeros(theta_shape, np.float32)
    raises_like(lambda: torch.affine_grid_generator(torch.tensor(th), size, align),
                lambda: retorch.affine_grid_generator(retorch.tensor(th), size, align))


# ---------------------------------------------------------------- from_file

@pytest.fixture
def raw_file(tmp_path):
    path = tmp_path / "raw.bin"
    path.write_bytes(bytes(range(1, 33)))
    return str(path)


@pytest.mark.parametrize("kw", [dict(size=8), dict(size=4, dtype="float64"),
                                dict(size=32, dtype="uint8"), dict(size=3, dtype="int64"),
                                dict(size=5, dtype="int16"), dict(size=6, dtype="bool"),
                                dict(size=16, dtype="float16"), dict(size=7, dtype="bfloat16"),
                                dict(), dict(size=0, dtype="int32")])
@pytest.mark.parametrize("shared", [None, False, True])
def test_from_file_values(raw_file, kw, shared):
    kt = {k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()}
    kr = {k: getattr(retorch, v) if k == "dtype" else v for k, v in kw.items()}
    t = torch.from_file(raw_file, shared, **kt)
    r = retorch.from_file(raw_file, shared, **kr)
    assert str(r.dtype) == str(t.dtype) and tuple(r.shape) == tuple(t.shape)
    if t.dtype == torch.bfloat16:
        np.testing.assert_array_equal(r.float().numpy(), t.float().numpy())
    else:
        np.testing.assert_array_equal(r.numpy(), t.numpy())
    assert tuple(r.stride()) == tuple(t.stride())


def test_from_file_shared_writes_through(raw_file, tmp_path):
    r = retorch.from_file(raw_file, True, 32, dtype=retorch.uint8)
    r[0] = 99
    assert open(raw_file, "rb").read(1) == b"c"
    p = retorch.from_file(raw_file, False, 32, dtype=retorch.uint8)
    p[1] = 77
    assert open(raw_file, "rb").read(2) == b"c\x02"
    # shared=True creates a missing file and grows a short one, as torch does.
    for m, name in ((torch, "t.bin"), (retorch, "r.bin")):
        path = str(tmp_path / name)
        v = m.from_file(path, True, 3)
        assert list(v.numpy()) == [0.0, 0.0, 0.0]
        assert (tmp_path / name).stat().st_size == 12
        assert m.from_file(raw_file, shared=True, size=40, dtype=m.uint8).numpy()[-1] == 0


def test_from_file_requires_grad_and_errors(raw_file, tmp_path):
    assert retorch.from_file(raw_file, size=4, requires_grad=True).requires_grad
    missing = str(tmp_path / "missing.bin")
    for call in (lambda m: m.from_file(raw_file, size=9),
                 lambda m: m.from_file(missing, size=2),
                 lambda m: m.from_file(raw_file, False, -1),
                 lambda m: m.from_file(raw_file, False, 3, m.float64),
                 lambda m: m.from_file(tmp_path / "raw.bin", size=2),
                 lambda m: m.from_file(raw_file, size=4, dtype=m.uint8, requires_grad=True)):
        raises_like(lambda: call(torch), lambda: call(retorch))


# ---------------------------------------------------------------- small names

def test_flags_and_dlpack():
    assert retorch.is_vulkan_available() is torch.is_vulkan_available() is False
    r = retorch.arange(4.0)
    back = torch.utils.dlpack.from_dlpack(retorch.to_dlpack(r))
    np.testing.assert_array_equal(back.numpy(), r.numpy())


@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 4)])
def test_dense_attributes(shape):
    t, r = torch.zeros(shape), retorch.zeros(shape)
    for name in ("is_nested", "is_vulkan", "is_mkldnn", "is_ort"):
        assert getattr(r, name) is getattr(t, name) is False
    # torch 1.13 has dense_dim/sparse_dim for sparse layouts only (later torch: dim() and 0).
    raises_like(t.dense_dim, r.dense_dim)
    raises_like(t.sparse_dim, r.sparse_dim)


def test_variable():
    for m in (torch, retorch):
        a = m.ones(3)
        v = m.autograd.Variable(a, requires_grad=True)
        assert type(v) is m.Tensor and v.requires_grad and v.is_leaf
        assert v.data_ptr() == a.data_ptr() and not a.requires_grad
        assert not m.autograd.Variable(a).requires_grad
        assert m.autograd.Variable(a, True).requires_grad
        assert tuple(m.autograd.Variable().shape) == (0,)
        assert str(m.autograd.Variable().dtype).endswith("float32")
        assert isinstance(a, m.autograd.Variable)
        b = m.ones(2, requires_grad=True) * 2
        assert m.autograd.Variable(b).grad_fn is None
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert not m.autograd.Variable(a, volatile=True).requires_grad
        assert "volatile" in str(w[0].message)
        assert m.autograd.variable.Variable is m.autograd.Variable
    for call in (lambda m: m.autograd.Variable([1, 2]),
                 lambda m: m.autograd.Variable(m.ones(2, dtype=m.int64), requires_grad=True),
                 lambda m: m.autograd.variable(m.ones(2))):
        raises_like(lambda: call(torch), lambda: call(retorch))
