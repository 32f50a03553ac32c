"""linalg.householder_product/orgqr, nn.utils.skip_init and convert_conv2d_weight_memory_format,
testing's deprecated dtype getters and make_non_contiguous, and jit fork/wait, futures,
trace_module, freeze and optimize_for_inference, against torch 1.13."""
import random
import re
import warnings

import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(11)


def both(a, dtype):
    return retorch.tensor(a.astype(dtype)), torch.tensor(a.astype(dtype))


def raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


def assert_same_error(r_fn, t_fn, same_message=True):
    r, t = raised(r_fn), raised(t_fn)
    assert t is not None, "torch did not raise"
    assert r is not None, f"retorch did not raise; torch raised {t}"
    assert r[0] is t[0], f"{r} vs {t}"
    if same_message:
        assert r[1] == t[1]


# ---------------------------------------------------------------- householder_product

HH_SHAPES = [((3, 2), 2), ((4, 4), 3), ((4, 4), 4), ((5, 3), 0), ((5, 3), 1), ((1, 1), 1),
             ((2, 5, 3), 2), ((3, 1, 4, 4), 4), ((0, 3, 2), 2), ((6, 2), 2), ((2, 0, 0), 0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k", HH_SHAPES)
def test_householder_product_values(shape, k, dtype):
    a = RNG.randn(*shape)
    tau = RNG.randn(*shape[:-2], k)
    ra, ta = both(a, dtype)
    rt, tt = both(tau, dtype)
    got = retorch.linalg.householder_product(ra, rt)
    want = torch.linalg.householder_product(ta, tt)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype) == str(want.dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
    assert got.is_contiguous()


def test_householder_product_from_geqrf_is_q():
    a = torch.randn(5, 3, dtype=torch.float64)
    h, tau = torch.geqrf(a)
    got = retorch.linalg.householder_product(retorch.tensor(h.numpy()), retorch.tensor(tau.numpy()))
    np.testing.assert_allclose(got.numpy(), torch.linalg.qr(a).Q.numpy(), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k", [((3, 2), 2), ((4, 4), 3), ((5, 3), 1), ((2, 5, 3), 3),
                                     ((2, 1, 4, 2), 2), ((4, 4), 4)])
def test_householder_product_gradients(shape, k, dtype):
    a = RNG.randn(*shape)
    tau = RNG.rand(*shape[:-2], k) + 0.5
    g = RNG.randn(*shape)
    ra, ta = both(a, dtype)
    rt, tt = both(tau, dtype)
    rg, tg = both(g, dtype)
    for x in (ra, ta, rt, tt):
        x.requires_grad_(True)
    (retorch.linalg.householder_product(ra, rt) * rg).sum().backward()
    (torch.linalg.householder_product(ta, tt) * tg).sum().backward()
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(ra.grad.numpy(), ta.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(rt.grad.numpy(), tt.grad.numpy(), rtol=tol, atol=tol)
    assert str(ra.grad.dtype) == str(ta.grad.dtype)


def test_householder_product_second_order():
    a, tau = RNG.randn(4, 3), RNG.rand(3) + 0.5
    ra, ta = both(a, np.float64)
    rt, tt = both(tau, np.float64)
    for x in (ra, ta, rt, tt):
        x.requires_grad_(True)
    rgrad, = retorch.autograd.grad(retorch.linalg.householder_product(ra, rt).pow(2).sum() +
                                   retorch.linalg.householder_product(ra, rt)[0, 0], rt,
                                   create_graph=True)
    tgrad, = torch.autograd.grad(torch.linalg.householder_product(ta, tt).pow(2).sum() +
                                 torch.linalg.householder_product(ta, tt)[0, 0], tt,
                                 create_graph=True)
    rgrad.sum().backward()
    tgrad.sum().backward()
    np.testing.assert_allclose(ra.grad.numpy(), ta.grad.numpy(), atol=1e-10)


HH_ERRORS = [
    ((3,), (1,), "float32", "float32"),
    ((2, 3), (1,), "float32", "float32"),
    ((3, 2), (3,), "float32", "float32"),
    ((3, 2), (2, 1), "float32", "float32"),
    ((2, 3, 2), (3, 1), "float32", "float32"),
    ((2, 3, 2), (1,), "float32", "float32"),
    ((2, 3, 2), (2, 2, 1), "float32", "float32"),
    ((2, 1, 3, 2), (2, 3, 2), "float32", "float32"),
    ((3, 2), (2,), "float32", "float64"),
    ((3, 2), (2,), "float64", "float32"),
    ((3, 2), (2,), "int32", "int32"),
    ((3, 2), (2,), "float16", "float16"),
    ((3, 2), (2,), "bfloat16", "bfloat16"),
    ((3, 2), (5,), "int32", "int32"),
    ((3, 2), (), "float32", "float32"),
]


@pytest.mark.parametrize("ashape,tshape,adt,tdt", HH_ERRORS)
def test_householder_product_errors(ashape, tshape, adt, tdt):
    def make(m, shape, dt):
        return m.ones(shape, dtype=getattr(m, dt))
    for fn in ("householder_product", "orgqr"):
        def rcall():
            args = make(retorch, ashape, adt), make(retorch, tshape, tdt)
            return retorch.linalg.householder_product(*args) if fn != "orgqr" else \
                retorch.orgqr(*args)

        def tcall():
            args = make(torch, ashape, adt), make(torch, tshape, tdt)
            return torch.linalg.householder_product(*args) if fn != "orgqr" else \
                torch.orgqr(*args)
        assert_same_error(rcall, tcall, same_message=tshape != ())


def test_orgqr_alias_and_method():
    a, tau = RNG.randn(2, 4, 3), RNG.randn(2, 2)
    ra, ta = both(a, np.float64)
    rt, tt = both(tau, np.float64)
    want = torch.orgqr(ta, tt).numpy()
    np.testing.assert_allclose(retorch.orgqr(ra, rt).numpy(), want, atol=1e-12)
    np.testing.assert_allclose(ra.orgqr(rt).numpy(), want, atol=1e-12)
    np.testing.assert_allclose(retorch.orgqr(ra, input2=rt).numpy(), want, atol=1e-12)
    np.testing.assert_allclose(retorch.linalg.householder_product(input=ra, tau=rt).numpy(), want,
                               atol=1e-12)
    assert_same_error(lambda: retorch.orgqr(ra, [1.0]), lambda: torch.orgqr(ta, [1.0]))
    assert_same_error(lambda: ra.orgqr([1.0]), lambda: ta.orgqr([1.0]))
    assert_same_error(lambda: retorch.linalg.householder_product(ra, [1.0]),
                      lambda: torch.linalg.householder_product(ta, [1.0]))


def test_householder_product_out():
    a, tau = RNG.randn(3, 2), RNG.randn(2)
    ra, ta = both(a, np.float32)
    rt, tt = both(tau, np.float32)
    for dt in ("float32", "float64", "float16"):
        rout, tout = retorch.empty(0, dtype=getattr(retorch, dt)), \
            torch.empty(0, dtype=getattr(torch, dt))
        r = retorch.linalg.householder_product(ra, rt, out=rout)
        assert torch.linalg.householder_product(ta, tt, out=tout) is tout
        assert r is rout and str(rout.dtype) == str(tout.dtype)
        np.testing.assert_allclose(rout.float().numpy(), tout.float().numpy(), atol=1e-3)
    rlong, tlong = retorch.empty(0, dtype=retorch.int64), torch.empty(0, dtype=torch.int64)
    assert_same_error(lambda: retorch.linalg.householder_product(ra, rt, out=rlong),
                      lambda: torch.linalg.householder_product(ta, tt, out=tlong))
    with pytest.warns(UserWarning, match="resized"):
        retorch.linalg.householder_product(ra, rt, out=retorch.empty(1))
    ra.requires_grad_(True)
    ta.requires_grad_(True)
    assert_same_error(lambda: retorch.linalg.householder_product(ra, rt, out=retorch.empty(0)),
                      lambda: torch.linalg.householder_product(ta, tt, out=torch.empty(0)))


# ---------------------------------------------------------------- nn.utils

def describe(module):
    return [(n, tuple(p.shape), str(p.dtype), p.device.type, p.requires_grad,
             type(p).__name__) for n, p in module.named_parameters()] + \
        [(n, tuple(b.shape), str(b.dtype), b.device.type) for n, b in module.named_buffers()]


SKIP_CASES = [("Linear", (5, 3), {}), ("Linear", (), {"in_features": 6, "out_features": 1}),
              ("Conv2d", (3, 4, 3), {"bias": False}), ("BatchNorm2d", (4,), {}),
              ("LayerNorm", ((3, 4),), {}), ("Embedding", (10, 3), {}),
              ("Linear", (2, 2), {"dtype": "float64"}), ("Linear", (2, 2), {"device": "cpu"}),
              ("MultiheadAttention", (8, 2), {})]


@pytest.mark.parametrize("name,args,kwargs", SKIP_CASES)
def test_skip_init(name, args, kwargs):
    def kw(m):
        return {k: getattr(m, v) if k == "dtype" else v for k, v in kwargs.items()}
    r = retorch.nn.utils.skip_init(getattr(retorch.nn, name), *args, **kw(retorch))
    t = torch.nn.utils.skip_init(getattr(torch.nn, name), *args, **kw(torch))
    assert describe(r) == describe(t)
    assert isinstance(r, getattr(retorch.nn, name))


def test_skip_init_errors():
    class NoDevice(retorch.nn.Module):
        def __init__(self, n):
            super().__init__()

    class TNoDevice(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
    assert_same_error(lambda: retorch.nn.utils.skip_init(NoDevice, 1),
                      lambda: torch.nn.utils.skip_init(TNoDevice, 1))
    assert_same_error(lambda: retorch.nn.utils.skip_init(int),
                      lambda: torch.nn.utils.skip_init(int), same_message=False)
    assert_same_error(lambda: retorch.nn.utils.skip_init(3), lambda: torch.nn.utils.skip_init(3))
    assert_same_error(lambda: retorch.nn.utils.skip_init(retorch.nn.LSTM, 2, 3),
                      lambda: torch.nn.utils.skip_init(torch.nn.LSTM, 2, 3))


def test_module_to_empty():
    r = retorch.nn.Linear(3, 2, device="meta")
    t = torch.nn.Linear(3, 2, device="meta")
    w = r.weight
    assert r.to_empty(device="cpu") is r
    t.to_empty(device="cpu")
    assert r.weight is w and describe(r) == describe(t)
    with pytest.raises(TypeError):
        r.to_empty("cpu")  # device is keyword-only, as torch's


def build_convs(m):
    return m.nn.Sequential(m.nn.Conv2d(3, 4, 3), m.nn.ReLU(),
                           m.nn.Sequential(m.nn.ConvTranspose2d(4, 2, 3), m.nn.Conv1d(2, 2, 1)),
                           m.nn.Linear(3, 3))


@pytest.mark.parametrize("fmt", ["channels_last", "contiguous_format"])
def test_convert_conv2d_weight_memory_format(fmt):
    r, t = build_convs(retorch), build_convs(torch)
    r.load_state_dict({k: retorch.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    if fmt == "contiguous_format":  # start from channels_last to see the conversion back
        retorch.nn.utils.convert_conv2d_weight_memory_format(r, retorch.channels_last)
        torch.nn.utils.convert_conv2d_weight_memory_format(t, torch.channels_last)
    params = list(r.parameters())
    assert retorch.nn.utils.convert_conv2d_weight_memory_format(r, getattr(retorch, fmt)) is r
    torch.nn.utils.convert_conv2d_weight_memory_format(t, getattr(torch, fmt))
    assert all(a is b for a, b in zip(params, r.parameters()))
    for (name, rp), tp in zip(r.named_parameters(), t.parameters()):
        assert tuple(rp.stride()) == tuple(tp.stride()), name
        np.testing.assert_array_equal(rp.detach().numpy(), tp.detach().numpy())
        assert rp.requires_grad


# ---------------------------------------------------------------- testing

GETTERS = ["all_types", "all_types_and_complex", "all_types_and_half", "complex_types",
           "double_types", "empty_types", "floating_and_complex_types", "floating_types",
           "floating_types_and_half", "get_all_complex_dtypes", "get_all_dtypes",
           "get_all_fp_dtypes", "get_all_int_dtypes", "integral_types", "get_all_device_types"]
AND_GETTERS = ["all_types_and", "all_types_and_complex_and", "floating_and_complex_types_and",
               "floating_types_and", "integral_types_and"]
COMPLEX = {"complex64", "complex128", "complex32"}


def names(dtypes):
    return [str(d).rsplit(".", 1)[-1] for d in dtypes]


def call_warned(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        value = fn(*args, **kwargs)
    assert [x.category for x in w] == [FutureWarning]
    return value, str(w[0].message)


def check_getter(rv, tv, rmsg, tmsg):
    assert type(rv).__name__ == type(tv).__name__
    want = [n for n in names(tv) if n not in COMPLEX]
    assert names(rv) == want
    assert rmsg == tmsg.replace(repr(tv), repr(rv))
    if want == names(tv):
        assert rmsg == tmsg


@pytest.mark.parametrize("name", GETTERS)
def test_dtype_getters(name):
    rv, rmsg = call_warned(getattr(retorch.testing, name))
    tv, tmsg = call_warned(getattr(torch.testing, name))
    if name == "get_all_device_types":
        assert rv == tv and rmsg == tmsg
        return
    check_getter(rv, tv, rmsg, tmsg)


@pytest.mark.parametrize("name", AND_GETTERS)
def test_dtype_getters_and(name):
    rv, rmsg = call_warned(getattr(retorch.testing, name), retorch.bool, retorch.bfloat16)
    tv, tmsg = call_warned(getattr(torch.testing, name), torch.bool, torch.bfloat16)
    check_getter(rv, tv, rmsg, tmsg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(lambda: getattr(retorch.testing, name)("float32"),
                          lambda: getattr(torch.testing, name)("float32"))
        assert names(getattr(retorch.testing, name)() + (retorch.half,))[-1] == "float16"


@pytest.mark.parametrize("kwargs", [{}, {"include_half": False}, {"include_bfloat16": False},
                                    {"include_bool": False}, {"include_complex": False},
                                    {"include_complex32": True}])
def test_get_all_dtypes_flags(kwargs):
    rv, _ = call_warned(retorch.testing.get_all_dtypes, **kwargs)
    tv, _ = call_warned(torch.testing.get_all_dtypes, **kwargs)
    assert names(rv) == [n for n in names(tv) if n not in COMPLEX]
    fp = {k: v for k, v in kwargs.items() if k in ("include_half", "include_bfloat16")}
    assert names(call_warned(retorch.testing.get_all_fp_dtypes, **fp)[0]) == \
        names(call_warned(torch.testing.get_all_fp_dtypes, **fp)[0])
    assert call_warned(retorch.testing.get_all_complex_dtypes, True)[0] == []


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_get_all_math_dtypes(device):
    rv, _ = call_warned(retorch.testing.get_all_math_dtypes, device)
    tv, _ = call_warned(torch.testing.get_all_math_dtypes, device)
    assert names(rv) == [n for n in names(tv) if n not in COMPLEX]


@pytest.mark.parametrize("shape", [(3, 4), (5,), (2, 3, 4), (1, 6), (1,), (), (4, 1, 2)])
def test_make_non_contiguous(shape):
    a = np.asarray(RNG.randn(*shape), dtype=np.float32)
    for seed in range(8):  # the same Python random draws give torch's strides and offset
        random.seed(seed)
        r, rmsg = call_warned(retorch.testing.make_non_contiguous, retorch.tensor(a))
        random.seed(seed)
        t, tmsg = call_warned(torch.testing.make_non_contiguous, torch.tensor(a))
        assert rmsg == tmsg
        assert tuple(r.shape) == tuple(t.shape)
        assert tuple(r.stride()) == tuple(t.stride())
        assert r.storage_offset() == t.storage_offset()
        assert r.is_contiguous() == t.is_contiguous()
        np.testing.assert_array_equal(r.numpy(), t.numpy())
    rx, tx = retorch.tensor(a).requires_grad_(True), torch.tensor(a).requires_grad_(True)
    assert call_warned(retorch.testing.make_non_contiguous, rx)[0].requires_grad == \
        call_warned(torch.testing.make_non_contiguous, tx)[0].requires_grad


def test_make_non_contiguous_int():
    random.seed(3)
    r, _ = call_warned(retorch.testing.make_non_contiguous, retorch.arange(12).reshape(3, 4))
    random.seed(3)
    t, _ = call_warned(torch.testing.make_non_contiguous, torch.arange(12).reshape(3, 4))
    assert tuple(r.stride()) == tuple(t.stride()) and str(r.dtype) == str(t.dtype)
    np.testing.assert_array_equal(r.numpy(), t.numpy())


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_deprecated_rand(name):
    r, rmsg = call_warned(getattr(retorch.testing, name), 2, 3, dtype=retorch.float64)
    t, tmsg = call_warned(getattr(torch.testing, name), 2, 3, dtype=torch.float64)
    assert rmsg == tmsg and tuple(r.shape) == tuple(t.shape) and str(r.dtype) == str(t.dtype)


# ---------------------------------------------------------------- jit fork / wait / futures

def test_fork_wait():
    for m in (retorch, torch):
        x = m.ones(2)
        fut = m.jit.fork(lambda a, b=1: a + b, x, b=3)
        assert fut.done()
        np.testing.assert_array_equal(m.jit.wait(fut).numpy(), [4.0, 4.0])
        np.testing.assert_array_equal(fut.value().numpy(), [4.0, 4.0])
        assert m.jit.fork(lambda: (1, "a")).wait() == (1, "a")
        inner = m.jit.fork(lambda: m.jit.wait(m.jit.fork(lambda: 5)) + 1)
        assert m.jit.wait(inner) == 6
        lin = m.nn.Linear(2, 1)
        assert tuple(m.jit.wait(m.jit.fork(lin, m.ones(3, 2))).shape) == (3, 1)
    assert isinstance(retorch.jit.fork(lambda: 1), retorch.jit.Future)
    assert retorch.jit.Future is retorch.futures.Future


def test_fork_errors():
    def bad():
        raise ValueError("boom")
    assert_same_error(lambda: retorch.jit.fork(bad), lambda: torch.jit.fork(bad))
    assert_same_error(lambda: retorch.jit.fork(3), lambda: torch.jit.fork(3))
    assert_same_error(lambda: retorch.jit.wait(3), lambda: torch.jit.wait(3), same_message=False)


def test_fork_under_trace():
    def f(x):
        return retorch.jit.wait(retorch.jit.fork(lambda y: y * 2 + 1, x))
    x = retorch.randn(3)
    traced = retorch.jit.trace(f, (x,))
    np.testing.assert_allclose(traced(x).numpy(), (x * 2 + 1).numpy())


@pytest.mark.parametrize("m", [retorch, torch], ids=["retorch", "torch"])
def test_future_semantics(m):
    F = m.futures.Future
    f = F()
    assert not f.done()
    f.set_result(3)
    assert f.done() and f.wait() == 3 and f.value() == 3
    with pytest.raises(RuntimeError, match="complete again"):
        f.set_result(4)
    g = F()
    g.set_exception(ValueError("x"))
    with pytest.raises(ValueError, match="x"):
        g.wait()
    with pytest.raises(ValueError, match="x"):
        g.value()
    with pytest.raises(AssertionError):
        F().set_exception(3)
    with pytest.raises(RuntimeError, match="ValueError: x"):
        g.then(lambda fut: fut.value() + 1).wait()
    assert f.then(lambda fut: fut.value() + 1).wait() == 4
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f.then(lambda fut: 1 / 0).wait()
    seen = []
    u = F()
    u.add_done_callback(lambda fut: seen.append(fut.value()))
    v = u.then(lambda fut: fut.wait() * 2).then(lambda fut: fut.wait() + 1)
    assert not v.done()
    u.set_result(5)
    assert seen == [5] and v.wait() == 11
    f.add_done_callback(lambda fut: seen.append("inline"))
    assert seen == [5, "inline"]
    pending = F()
    c = m.futures.collect_all([f, pending])
    assert not c.done()
    pending.set_result(1)
    assert c.done() and [x.wait() for x in c.wait()] == [3, 1]
    assert m.futures.wait_all([f, pending]) == [3, 1]
    with pytest.raises(ValueError, match="x"):
        m.futures.wait_all([f, g])
    assert m.futures.collect_all([]).wait() == []
    with pytest.raises(ValueError, match="indices"):
        F(devices=["cpu"])


def test_future_wait_blocks_across_threads():
    import threading
    f = retorch.futures.Future()
    threading.Timer(0.05, lambda: f.set_result("done")).start()
    assert f.wait() == "done"


# ---------------------------------------------------------------- jit trace_module / freeze

def make_net(m):
    class Net(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = m.nn.Linear(3, 4)
            self.bn = m.nn.BatchNorm1d(4)
            self.out = m.nn.Linear(4, 2)
            self.scale = m.nn.Parameter(m.tensor(0.5))

        def forward(self, x):
            return self.out(self.bn(self.fc(x)).relu()) * self.scale

        def weighted(self, w, b):
            return self.fc.weight * w + b, w
    net = Net()
    return net


def twin_nets():
    t = make_net(torch)
    with torch.no_grad():
        t.bn.running_mean.uniform_(-1, 1)
        t.bn.running_var.uniform_(0.5, 2)
    r = make_net(retorch)
    r.load_state_dict({k: retorch.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return r, t


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


X = RNG.randn(5, 3).astype(np.float32)
W = RNG.randn(4, 3).astype(np.float32)
B = RNG.randn(4, 3).astype(np.float32)


def test_trace_module_methods():
    r, t = twin_nets()
    r.eval()
    t.eval()
    rx, tx = retorch.tensor(X), torch.tensor(X)
    rm = retorch.jit.trace_module(r, {"forward": rx, "weighted": [retorch.tensor(W),
                                                                  retorch.tensor(B)]})
    tm = quiet(torch.jit.trace_module, t, {"forward": tx, "weighted": [torch.tensor(W),
                                                                        torch.tensor(B)]})
    np.testing.assert_allclose(rm(rx).detach().numpy(), tm(tx).detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(rm.forward(rx).detach().numpy(), tm.forward(tx).detach().numpy(),
                               atol=1e-5)
    w2, b2 = RNG.randn(4, 3).astype(np.float32), RNG.randn(4, 3).astype(np.float32)
    ro = rm.weighted(retorch.tensor(w2), retorch.tensor(b2))
    to = tm.weighted(torch.tensor(w2), torch.tensor(b2))
    assert type(ro) is type(to) is tuple and len(ro) == len(to)
    for a, b in zip(ro, to):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-6)
    assert "aten::mul" in str(rm.weighted.graph)
    assert rm.training == tm.training is False
    assert [n for n, _ in rm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    # The traced methods read the module's own parameters.
    with retorch.no_grad():
        r.fc.weight.add_(1.0)
    got = rm.weighted(retorch.tensor(w2), retorch.tensor(b2))[0]
    want = r.fc.weight * retorch.tensor(w2) + retorch.tensor(b2)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-6)


def test_trace_module_without_forward_and_errors():
    r, t = twin_nets()
    rm = retorch.jit.trace_module(r, {"weighted": (retorch.tensor(W), retorch.tensor(B))})
    tm = quiet(torch.jit.trace_module, t, {"weighted": (torch.tensor(W), torch.tensor(B))})
    assert rm.training is tm.training is True
    assert_same_error(lambda: rm(retorch.tensor(X)), lambda: tm(torch.tensor(X)),
                      same_message=False)
    assert_same_error(lambda: retorch.jit.trace_module(lambda x: x, {}),
                      lambda: torch.jit.trace_module(lambda x: x, {}))
    assert_same_error(lambda: retorch.jit.trace_module(r, [1]),
                      lambda: torch.jit.trace_module(t, [1]))
    assert_same_error(lambda: retorch.jit.trace_module(r, {"nope": retorch.ones(1)}),
                      lambda: torch.jit.trace_module(t, {"nope": torch.ones(1)}),
                      same_message=False)
    assert_same_error(lambda: retorch.jit.trace_module(r, {"forward": 3}),
                      lambda: torch.jit.trace_module(t, {"forward": 3}))


def test_freeze_matches_torch():
    r, t = twin_nets()
    rx, tx = retorch.tensor(X), torch.tensor(X)
    rt = retorch.jit.trace(r.eval(), (rx,))
    tt = quiet(torch.jit.trace, t.eval(), (tx,))
    rf, tf = retorch.jit.freeze(rt), torch.jit.freeze(tt)
    np.testing.assert_allclose(rf(rx).numpy(), tf(tx).numpy(), atol=1e-5)
    assert rf(rx).requires_grad == tf(tx).requires_grad is False
    assert ("prim::GetAttr" in str(rf.graph)) == ("prim::GetAttr" in str(tf.graph)) is False
    assert list(rf.named_parameters()) == list(tf.named_parameters()) == []
    assert hasattr(rf, "training") == hasattr(tf, "training")
    # A new input of the traced shape runs through the frozen graph too.
    x2 = RNG.randn(5, 3).astype(np.float32)
    np.testing.assert_allclose(rf(retorch.tensor(x2)).numpy(), tf(torch.tensor(x2)).numpy(),
                               atol=1e-5)


def test_freeze_preserved_attrs_and_methods():
    r, t = twin_nets()
    r.eval()
    t.eval()
    inputs = {"forward": retorch.tensor(X), "weighted": (retorch.tensor(W), retorch.tensor(B))}
    tinputs = {"forward": torch.tensor(X), "weighted": (torch.tensor(W), torch.tensor(B))}
    rm = retorch.jit.trace_module(r, inputs)
    tm = quiet(torch.jit.trace_module, t, tinputs)
    rf = retorch.jit.freeze(rm, preserved_attrs=["scale", "weighted"])
    tf = torch.jit.freeze(tm, preserved_attrs=["scale", "weighted"])
    assert [n for n, _ in rf.named_parameters()] == [n for n, _ in tf.named_parameters()]
    assert hasattr(rf, "weighted") == hasattr(tf, "weighted") is True
    for a, b in zip(rf.weighted(*inputs["weighted"]), tf.weighted(*tinputs["weighted"])):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(rf(retorch.tensor(X)).detach().numpy(),
                               tf(torch.tensor(X)).detach().numpy(), atol=1e-5)
    rf2 = retorch.jit.freeze(rm)
    tf2 = torch.jit.freeze(tm)
    assert hasattr(rf2, "weighted") == hasattr(tf2, "weighted")


def test_freeze_errors():
    r, t = twin_nets()
    rx, tx = retorch.tensor(X), torch.tensor(X)
    rt = retorch.jit.trace(r, (rx,))  # train mode
    tt = quiet(torch.jit.trace, t, (tx,), check_trace=False)
    assert_same_error(lambda: retorch.jit.freeze(rt), lambda: torch.jit.freeze(tt))
    assert_same_error(lambda: retorch.jit.freeze(r.eval()), lambda: torch.jit.freeze(t.eval()))
    rfn = retorch.jit.trace(lambda x: x + 1, (rx,))
    tfn = torch.jit.trace(lambda x: x + 1, (tx,))
    assert_same_error(lambda: retorch.jit.freeze(rfn), lambda: torch.jit.freeze(tfn))
    assert_same_error(lambda: retorch.jit.optimize_for_inference(r),
                      lambda: torch.jit.optimize_for_inference(t))
    assert_same_error(lambda: retorch.jit.optimize_for_inference(rfn),
                      lambda: torch.jit.optimize_for_inference(tfn))


def test_optimize_for_inference():
    r, t = twin_nets()
    r.eval()
    t.eval()
    rx, tx = retorch.tensor(X), torch.tensor(X)
    rt = retorch.jit.trace(r, (rx,))
    tt = quiet(torch.jit.trace, t, (tx,))
    rt.train()
    tt.train()
    ro = retorch.jit.optimize_for_inference(rt)
    to = torch.jit.optimize_for_inference(tt)
    assert rt.training == tt.training is False  # optimize_for_inference calls eval() on it
    np.testing.assert_allclose(ro(rx).numpy(), to(tx).numpy(), atol=1e-5)
    assert "prim::GetAttr" not in str(ro.graph)
    assert list(ro.named_parameters()) == list(to.named_parameters()) == []
    again = retorch.jit.optimize_for_inference(ro)
    np.testing.assert_allclose(again(rx).numpy(), to(tx).numpy(), atol=1e-5)


def test_freeze_folds_constant_subexpressions_and_snapshots():
    r = retorch.nn.Linear(3, 2).eval()
    x = retorch.tensor(X)

    class M(retorch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = retorch.nn.Parameter(retorch.randn(3, 2))

        def forward(self, x):
            return x.matmul(self.w.t().t() * 2.0)
    m = M().eval()
    frozen = retorch.jit.freeze(retorch.jit.trace(m, (x,)))
    kinds = frozen._c.graph.node_kinds()
    assert "aten::t" not in kinds and "aten::mul" not in kinds, kinds  # folded into a constant
    np.testing.assert_allclose(frozen(x).numpy(), m(x).detach().numpy(), atol=1e-5)
    # Snapshots: an in-place change to the module does not reach the frozen graph (see the note
    # in python/retorch/jit/_freeze.py; torch's frozen constants alias the parameters instead).
    y = frozen(x)
    with retorch.no_grad():
        m.w.add_(1.0)
    np.testing.assert_array_equal(frozen(x).numpy(), y.numpy())
    assert re.search(r"prim::Constant\[value=<Tensor>\]", str(frozen.graph))
    del r


def test_freeze_loaded_module(tmp_path):
    r, _ = twin_nets()
    r.eval()
    x = retorch.tensor(X)
    path = tmp_path / "net.pt"
    retorch.jit.save(retorch.jit.trace(r, (x,)), path)
    loaded = retorch.jit.load(path)
    frozen = retorch.jit.freeze(loaded)
    np.testing.assert_allclose(frozen(x).numpy(), r(x).detach().numpy(), atol=1e-5)
    assert "prim::GetAttr" not in str(frozen.graph)
