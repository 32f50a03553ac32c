"""python/retorch/_api_gaps5.py (geqrf, ormqr, batch_norm_update_stats) against torch 1.13:
values, shapes, dtypes, in-place updates, out=, warnings, autograd and error classes/messages."""
import warnings

import numpy as np
import pytest
import torch

import retorch
from test_api_gaps3 import both  # (the (torch, retorch) pair of an array)

RNG = np.random.RandomState(5)
DTYPES = [(np.float64, 1e-10), (np.float32, 2e-5)]


def close(r, t, tol=1e-10):
    assert tuple(r.shape) == tuple(t.shape)
    assert str(r.dtype) == str(t.dtype)
    np.testing.assert_allclose(r.detach().float().numpy() if str(r.dtype) == "torch.bfloat16"
                               else r.detach().numpy(),
                               t.detach().float().numpy() if t.dtype == torch.bfloat16
                               else t.detach().numpy(), rtol=tol, atol=tol)


def raises_like(fn_t, fn_r, same_message=True):
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(Exception) as er:
        fn_r()
    assert type(er.value) is type(et.value), (er.value, et.value)
    if same_message:
        assert str(er.value) == str(et.value)


def randn(*shape, dtype=np.float64):
    return RNG.randn(*shape).astype(dtype)


# ---------------------------------------------------------------- geqrf

GEQRF_SHAPES = [(4, 3), (3, 3), (3, 5), (1, 1), (5, 1), (1, 4), (2, 3, 4, 2), (2, 4, 6),
                (3, 5, 5), (2, 0, 3), (2, 3, 0), (0, 3, 3)]


@pytest.mark.parametrize("shape", GEQRF_SHAPES)
@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_geqrf_matches_torch(shape, dtype, tol):
    t, r = both(randn(*shape, dtype=dtype))
    gt, gr = torch.geqrf(t), retorch.geqrf(r)
    assert type(gr).__name__ == "geqrf" and gr._fields == ("a", "tau")
    close(gr.a, gt.a, tol)
    close(gr.tau, gt.tau, tol)
    close(gr[0], gt[0], tol)
    close(r.geqrf().tau, t.geqrf().tau, tol)


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 6), (2, 5, 3), (2, 3, 4)])
@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_geqrf_householder_product_rebuilds_input(shape, dtype, tol):
    a_np = randn(*shape, dtype=dtype)
    _, x = both(a_np)
    a, tau = retorch.geqrf(x)
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    q = retorch.linalg.householder_product(a[..., :, :k], tau)  # (m, k), orthonormal columns
    rmat = retorch.triu(a[..., :k, :])
    np.testing.assert_allclose(q.matmul(rmat).numpy(), a_np, rtol=tol * 10, atol=tol * 10)
    eye = np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k))
    np.testing.assert_allclose(q.transpose(-2, -1).matmul(q).numpy(), eye, atol=tol * 10)


@pytest.mark.parametrize("rows", [
    [[-2., 1], [0, 1], [0, 3]],          # first column already reduced, negative alpha
    [[2., 1], [0, 1], [0, 3]],           # already reduced, positive alpha
    [[0., 1], [0, 1], [0, 3]],           # zero column
    [[0., 0, 0], [0, 0, 0], [0, 0, 0]],  # zero matrix
    [[0., 1], [3, 1], [4, 3]],           # zero alpha with a nonzero column below it
    [[3., 1, 2], [0, 0, 5], [0, 0, 1]],  # second column zero below its diagonal
])
def test_geqrf_special_columns(rows):
    t, r = both(rows)
    gt, gr = torch.geqrf(t), retorch.geqrf(r)
    close(gr.a, gt.a, 1e-12)
    close(gr.tau, gt.tau, 1e-12)


def test_geqrf_requires_grad_has_no_derivative():
    t, r = both(randn(4, 3), requires_grad=True)
    gt, gr = torch.geqrf(t), retorch.geqrf(r)
    close(gr.a, gt.a)
    assert gr.a.requires_grad and gr.tau.requires_grad
    assert gr.a.grad_fn.name() == gt.a.grad_fn.name() == "GeqrfBackward0"
    raises_like(lambda: gt.a.sum().backward(), lambda: gr.a.sum().backward())
    with retorch.no_grad():
        assert not retorch.geqrf(r).a.requires_grad


def test_geqrf_errors():
    raises_like(lambda: torch.geqrf(torch.ones(3)), lambda: retorch.geqrf(retorch.ones(3)))
    for td, rd in [(torch.int64, retorch.int64), (torch.float16, retorch.float16),
                   (torch.bfloat16, retorch.bfloat16)]:
        raises_like(lambda: torch.geqrf(torch.ones(3, 3, dtype=td)),
                    lambda: retorch.geqrf(retorch.ones(3, 3, dtype=rd)))
    raises_like(lambda: torch.geqrf(3), lambda: retorch.geqrf(3))
    t, r = both(randn(3, 3))
    raises_like(lambda: torch.geqrf(t, t), lambda: retorch.geqrf(r, r), same_message=False)
    raises_like(lambda: t.geqrf(out=(t, t)), lambda: r.geqrf(out=(r, r)), same_message=False)


def test_geqrf_out():
    t, r = both(randn(2, 4, 3))
    ot = (torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.float64))
    orr = (retorch.empty(0, dtype=retorch.float64), retorch.empty(0, dtype=retorch.float64))
    res_t, res_r = torch.geqrf(t, out=ot), retorch.geqrf(r, out=orr)
    assert type(res_r).__name__ == type(res_t).__name__ == "geqrf_out"
    assert res_r[0] is orr[0] and res_r[1] is orr[1]
    close(orr[0], ot[0])
    close(orr[1], ot[1])
    # A float64 result fits float32 outputs; outputs holding elements are resized with a warning.
    for m, x in ((torch, t), (retorch, r)):
        outs = (m.empty(2), m.empty(5))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.geqrf(x, out=outs)
        assert len(w) == 2 and "was resized since it had shape [2]" in str(w[0].message)
        assert tuple(outs[0].shape) == (2, 4, 3) and str(outs[1].dtype) == "torch.float32"
        assert tuple(outs[1].shape) == (2, 3)


def test_geqrf_out_errors():
    t, r = both(randn(3, 3))
    tg, rg = both(randn(3, 3), requires_grad=True)

    def outs(m, d1, d2, n=2):
        return tuple(m.empty(0, dtype=getattr(m, d)) for d in (d1, d2, "float64")[:n])

    for d1, d2 in [("int64", "float64"), ("float64", "int64")]:
        raises_like(lambda: torch.geqrf(t, out=outs(torch, d1, d2)),
                    lambda: retorch.geqrf(r, out=outs(retorch, d1, d2)))
    raises_like(lambda: torch.geqrf(tg, out=outs(torch, "float64", "float64")),
                lambda: retorch.geqrf(rg, out=outs(retorch, "float64", "float64")))
    for n in (1, 3):
        raises_like(lambda: torch.geqrf(t, out=outs(torch, "float64", "float64", n)),
                    lambda: retorch.geqrf(r, out=outs(retorch, "float64", "float64", n)))
    raises_like(lambda: torch.geqrf(t, out=torch.empty(0)),
                lambda: retorch.geqrf(r, out=retorch.empty(0)))
    raises_like(lambda: torch.geqrf(t, out=(3, torch.empty(0))),
                lambda: retorch.geqrf(r, out=(3, retorch.empty(0))))
    raises_like(lambda: torch.geqrf(torch.ones(3), out=outs(torch, "int64", "int64")),
                lambda: retorch.geqrf(retorch.ones(3), out=outs(retorch, "int64", "int64")))


# ---------------------------------------------------------------- ormqr

# (input shape, tau length, other shape) for left=True and left=False.
ORMQR_LEFT = [((4, 3), 3, (4, 2)), ((4, 4), 4, (4, 5)), ((4, 3), 2, (4, 4)),
              ((3, 5), 3, (3, 4)), ((2, 5, 3), 3, (2, 5, 2)), ((2, 3, 4, 2), 2, (2, 3, 4, 3)),
              ((4, 0), 0, (4, 3)), ((4, 3), 3, (4, 0)), ((0, 4, 3), 3, (0, 4, 2))]
ORMQR_RIGHT = [((4, 3), 3, (2, 4)), ((4, 4), 4, (5, 4)), ((3, 5), 2, (6, 3)),
               ((2, 5, 3), 3, (2, 1, 5)), ((0, 0), 0, (3, 0))]


@pytest.mark.parametrize("left,case", [(True, c) for c in ORMQR_LEFT] +
                         [(False, c) for c in ORMQR_RIGHT])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_ormqr_matches_torch(left, case, transpose, dtype, tol):
    in_shape, k, other_shape = case
    a_np = randn(*in_shape, dtype=dtype)
    tau_np = (RNG.rand(*in_shape[:-2], k) + 1).astype(dtype)  # LAPACK's taus lie in [1, 2]
    c_np = randn(*other_shape, dtype=dtype)
    at, ar = both(a_np)
    tt, tr = both(tau_np)
    ct, cr = both(c_np)
    expect = torch.ormqr(at, tt, ct, left, transpose)
    close(retorch.ormqr(ar, tr, cr, left, transpose), expect, tol * 10)
    close(ar.ormqr(tr, cr, left, transpose), expect, tol * 10)
    close(retorch.ormqr(ar, input2=tr, input3=cr, left=left, transpose=transpose), expect,
          tol * 10)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_from_geqrf_is_q(left, transpose):
    """ormqr with geqrf's reflectors multiplies by the Q of the QR decomposition."""
    x_np, c_np = randn(2, 5, 3), randn(2, 5, 5)
    x, c = retorch.tensor(x_np), retorch.tensor(c_np)
    a, tau = retorch.geqrf(x)
    q_full, _ = np.linalg.qr(x_np, mode="complete")
    # Q's sign convention is LAPACK's; its first 3 columns times R give x back either way.
    q = retorch.ormqr(a, tau, retorch.tensor(np.broadcast_to(np.eye(5), (2, 5, 5)).copy()))
    np.testing.assert_allclose(np.abs(q.numpy()[..., :3]), np.abs(q_full[..., :3]), atol=1e-12)
    op = q.numpy().swapaxes(-1, -2) if transpose else q.numpy()
    want = op @ c_np if left else c_np @ op
    np.testing.assert_allclose(retorch.ormqr(a, tau, c, left, transpose).numpy(), want,
                               atol=1e-12)
    at, tt = torch.geqrf(torch.tensor(x_np))
    close(retorch.ormqr(a, tau, c, left, transpose),
          torch.ormqr(at, tt, torch.tensor(c_np), left, transpose), 1e-12)


def test_ormqr_requires_grad_has_no_derivative():
    for grads in [(True, False, False), (False, True, False), (False, False, True)]:
        arrays = [randn(4, 3), RNG.rand(3) + 1, randn(4, 2)]
        ts, rs = zip(*[both(a, g) for a, g in zip(arrays, grads)])
        yt, yr = torch.ormqr(*ts), retorch.ormqr(*rs)
        close(yr, yt)
        assert yr.requires_grad
        assert yr.grad_fn.name() == yt.grad_fn.name() == "OrmqrBackward0"
        raises_like(lambda: yt.sum().backward(), lambda: yr.sum().backward())


def _ormqr_error_cases():
    R = randn
    return [
        ((R(3), R(1), R(3, 3)), {}),
        ((R(3, 3), R(3), R(3)), {}),
        ((R(3, 3), np.array(1.0), R(3, 3)), {}),
        ((R(3, 3), R(3), R(2, 3)), {}),
        ((R(3, 3), R(1, 3), R(3, 3)), {}),
        ((R(5, 4), R(4), R(3, 2)), {}),
        ((R(5, 2), R(2), R(4, 2)), {}),
        ((R(5, 2), R(2), R(4, 3)), {"left": False}),
        ((R(3, 4), R(4), R(4, 3)), {"left": False}),
        ((R(4, 2), R(3), R(4, 4)), {}),
        ((R(2, 4, 3), R(3, 3), R(2, 4, 4)), {}),
        ((R(2, 4, 3), R(2, 3), R(3, 4, 4)), {}),
        ((R(2, 4, 3), R(2, 3), R(4, 4)), {}),
        ((R(4, 3), R(3), R(2, 4, 4)), {}),
        ((R(1, 4, 3), R(1, 3), R(2, 4, 4)), {}),
        ((R(4, 3), R(3, dtype=np.float32), R(4, 4)), {}),
        ((R(4, 3), R(3), R(4, 4, dtype=np.float32)), {}),
        ((R(2, 3, 3), R(3, 3, dtype=np.float32), R(2, 3, 3)), {}),
        ((R(4, 3).astype(np.int64), R(3).astype(np.int64), R(4, 4).astype(np.int64)), {}),
        ((R(4, 3).astype(np.float16), R(3).astype(np.float16), R(4, 4).astype(np.float16)),
         {}),
    ]


@pytest.mark.parametrize("index", range(len(_ormqr_error_cases())))
def test_ormqr_errors(index):
    arrays, kwargs = _ormqr_error_cases()[index]
    ts, rs = zip(*[both(a) for a in arrays])
    raises_like(lambda: torch.ormqr(*ts, **kwargs), lambda: retorch.ormqr(*rs, **kwargs))


def test_ormqr_argument_errors():
    (at, ar), (tt, tr), (ct, cr) = both(randn(4, 3)), both(RNG.rand(3)), both(randn(4, 4))
    raises_like(lambda: torch.ormqr(3, tt, ct), lambda: retorch.ormqr(3, tr, cr))
    raises_like(lambda: torch.ormqr(at, 3, ct), lambda: retorch.ormqr(ar, 3, cr))
    raises_like(lambda: torch.ormqr(at, tt, 4), lambda: retorch.ormqr(ar, tr, 4))
    raises_like(lambda: torch.ormqr(at, tt, ct, "x"), lambda: retorch.ormqr(ar, tr, cr, "x"))
    raises_like(lambda: torch.ormqr(at, tt, ct, 1), lambda: retorch.ormqr(ar, tr, cr, 1))
    raises_like(lambda: torch.ormqr(at, tt, ct, True, 0),
                lambda: retorch.ormqr(ar, tr, cr, True, 0))
    raises_like(lambda: at.ormqr(3, ct), lambda: ar.ormqr(3, cr))
    raises_like(lambda: at.ormqr(tt, 3), lambda: ar.ormqr(tr, 3))
    raises_like(lambda: at.ormqr(tt, ct, 1), lambda: ar.ormqr(tr, cr, 1))
    raises_like(lambda: at.ormqr(tt, ct, True, 0), lambda: ar.ormqr(tr, cr, True, 0))
    raises_like(lambda: torch.ormqr(at, tt, ct, out=3), lambda: retorch.ormqr(ar, tr, cr, out=3))
    # torch 1.13's binding names tau and other input2 and input3.
    raises_like(lambda: torch.ormqr(input=at, tau=tt, other=ct),
                lambda: retorch.ormqr(input=ar, tau=tr, other=cr), same_message=False)


def test_ormqr_out():
    (at, ar), (tt, tr), (ct, cr) = both(randn(4, 3)), both(RNG.rand(3) + 1), both(randn(4, 2))
    for left, transpose in [(True, False), (True, True)]:
        ot, orr = torch.empty(0, dtype=torch.float64), retorch.empty(0, dtype=retorch.float64)
        res_t = torch.ormqr(at, tt, ct, left, transpose, out=ot)
        res_r = retorch.ormqr(ar, tr, cr, left, transpose, out=orr)
        assert res_r is orr and res_t is ot
        close(orr, ot)
    for m, a, t, c in ((torch, at, tt, ct), (retorch, ar, tr, cr)):
        out = m.empty(2, dtype=m.float64)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.ormqr(a, t, c, out=out)
        assert len(w) == 1 and "was resized since it had shape [2]" in str(w[0].message)
        assert tuple(out.shape) == (4, 2)
    for td, rd in [(torch.float32, retorch.float32), (torch.int64, retorch.int64)]:
        raises_like(lambda: torch.ormqr(at, tt, ct, out=torch.empty(0, dtype=td)),
                    lambda: retorch.ormqr(ar, tr, cr, out=retorch.empty(0, dtype=rd)))
    # out's dtype is checked after the shapes and the tau/other dtypes, before the kernel's.
    raises_like(lambda: torch.ormqr(torch.ones(3), tt, ct, out=torch.empty(0)),
                lambda: retorch.ormqr(retorch.ones(3), tr, cr, out=retorch.empty(0)))
    raises_like(lambda: torch.ormqr(at, tt.float(), ct, out=torch.empty(0)),
                lambda: retorch.ormqr(ar, tr.float(), cr, out=retorch.empty(0)))
    raises_like(lambda: torch.ormqr(at.long(), tt.long(), ct.long(), out=torch.empty(0)),
                lambda: retorch.ormqr(ar.long(), tr.long(), cr.long(), out=retorch.empty(0)))
    ag_t, ag_r = both(randn(4, 3), requires_grad=True)
    raises_like(lambda: torch.ormqr(ag_t, tt, ct, out=torch.empty(0, dtype=torch.float64)),
                lambda: retorch.ormqr(ag_r, tr, cr, out=retorch.empty(0, dtype=retorch.float64)))


# ---------------------------------------------------------------- batch_norm_update_stats

def _stats_pair(c, dtype=np.float32):
    mean, var = RNG.randn(c).astype(dtype), (RNG.rand(c) + 0.5).astype(dtype)
    return both(mean), both(var)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 2), (2, 4, 1, 3, 2), (1, 3)])
@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("given", ["both", "mean", "var", "none"])
@pytest.mark.parametrize("momentum", [0.1, 1, 0.0])
def test_batch_norm_update_stats_matches_torch(shape, dtype, tol, given, momentum):
    t, r = both(randn(*shape, dtype=dtype))
    (mt, mr), (vt, vr) = _stats_pair(shape[1], dtype)
    rm_t, rm_r = (mt, mr) if given in ("both", "mean") else (None, None)
    rv_t, rv_r = (vt, vr) if given in ("both", "var") else (None, None)
    res_t = torch.batch_norm_update_stats(t, rm_t, rv_t, momentum)
    res_r = retorch.batch_norm_update_stats(r, rm_r, rv_r, momentum)
    assert type(res_r) is type(res_t) is tuple and len(res_r) == 2
    close(res_r[0], res_t[0], tol)
    close(res_r[1], res_t[1], tol)  # the biased variance
    # The running statistics move in place (toward the unbiased variance); n = 1 gives nan.
    close(mr, mt, tol)
    close(vr, vt, tol)


def test_batch_norm_update_stats_momentum_kinds_and_views():
    t, r = both(randn(5, 3, 2))
    for mom_t, mom_r in [(True, True), (torch.tensor(0.25), retorch.tensor(0.25))]:
        (mt, mr), (vt, vr) = _stats_pair(3, np.float64)
        close(retorch.batch_norm_update_stats(r, mr, vr, mom_r)[0],
              torch.batch_norm_update_stats(t, mt, vt, mom_t)[0])
        close(mr, mt)
        close(vr, vt)
    # A strided running stat is updated through the view.
    base_t, base_r = both(np.zeros((3, 2)))
    torch.batch_norm_update_stats(t, base_t[:, 0], None, 0.5)
    retorch.batch_norm_update_stats(r, base_r[:, 0], None, 0.5)
    close(base_r, base_t)


def test_batch_norm_update_stats_bfloat16():
    x = randn(6, 3, 2, dtype=np.float32)
    t, r = torch.tensor(x).bfloat16(), retorch.tensor(x).bfloat16()
    (mt, mr), (vt, vr) = _stats_pair(3)
    # BFloat16 input with Float running stats: Float results.
    res_t = torch.batch_norm_update_stats(t, mt, vt, 0.1)
    res_r = retorch.batch_norm_update_stats(r, mr, vr, 0.1)
    close(res_r[0], res_t[0], 1e-5)
    close(res_r[1], res_t[1], 1e-5)
    close(mr, mt, 1e-5)
    close(vr, vt, 1e-5)
    res_t = torch.batch_norm_update_stats(t, None, None, 0.1)
    res_r = retorch.batch_norm_update_stats(r, None, None, 0.1)
    close(res_r[0], res_t[0], 1e-2)
    close(res_r[1], res_t[1], 1e-2)


def test_batch_norm_update_stats_dtype_errors():
    x = randn(4, 3, dtype=np.float32)

    def run(m, xd, md, vd):
        inp = m.tensor(x).to(getattr(m, xd))
        mean = None if md is None else m.zeros(3, dtype=getattr(m, md))
        var = None if vd is None else m.ones(3, dtype=getattr(m, vd))
        return m.batch_norm_update_stats(inp, mean, var, 0.1)

    cases = [("float64", "float32", "float32"), ("float32", "float64", "float64"),
             ("bfloat16", "float64", "float64"), ("float64", "float64", "float32"),
             ("float32", None, "float64"), ("float32", "float32", "float64"),
             ("bfloat16", "float32", "bfloat16"), ("float32", "int64", None),
             ("int64", None, None), ("float16", None, None)]
    for case in cases:
        raises_like(lambda: run(torch, *case), lambda: run(retorch, *case))


def test_batch_norm_update_stats_argument_errors():
    t, r = both(randn(4, 3))
    f_t, f_r = torch.batch_norm_update_stats, retorch.batch_norm_update_stats
    raises_like(lambda: f_t(torch.ones(3), None, None, 0.1),
                lambda: f_r(retorch.ones(3), None, None, 0.1))
    raises_like(lambda: f_t(torch.tensor(1.0), None, None, 0.1),
                lambda: f_r(retorch.tensor(1.0), None, None, 0.1))
    raises_like(lambda: f_t(3, None, None, 0.1), lambda: f_r(3, None, None, 0.1))
    raises_like(lambda: f_t(t, 3, None, 0.1), lambda: f_r(r, 3, None, 0.1))
    raises_like(lambda: f_t(t, None, 3, 0.1), lambda: f_r(r, None, 3, 0.1))
    for bad in (None, "a"):
        raises_like(lambda: f_t(t, None, None, bad), lambda: f_r(r, None, None, bad))
    raises_like(lambda: f_t(t, None, None), lambda: f_r(r, None, None), same_message=False)
    raises_like(lambda: f_t(t, torch.zeros(3, 1), None, 0.1),
                lambda: f_r(r, retorch.zeros(3, 1), None, 0.1))
    res_t = f_t(input=t, running_mean=None, running_var=None, momentum=0.1)
    close(f_r(input=r, running_mean=None, running_var=None, momentum=0.1)[1], res_t[1])
    # torch reads past a running stat with too few elements; retorch refuses it.
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 2"):
        f_r(r, retorch.zeros(2, dtype=retorch.float64), None, 0.1)
    assert not hasattr(torch.Tensor, "batch_norm_update_stats")
    assert not hasattr(retorch.Tensor, "batch_norm_update_stats")


def test_batch_norm_update_stats_has_no_derivative():
    t, r = both(randn(4, 3), requires_grad=True)
    res_t = torch.batch_norm_update_stats(t, None, None, 0.1)
    res_r = retorch.batch_norm_update_stats(r, None, None, 0.1)
    assert res_r[0].requires_grad and res_r[1].requires_grad
    close(res_r[0], res_t[0])
    for i in (0, 1):
        raises_like(lambda: res_t[i].sum().backward(retain_graph=True),
                    lambda: res_r[i].sum().backward(retain_graph=True))
    # A running stat that requires grad is still updated in place, and marks the results.
    (mt, mr), _ = _stats_pair(3, np.float64)
    mt.requires_grad_(True)
    mr.requires_grad_(True)
    xt, xr = both(randn(4, 3))
    res_t = torch.batch_norm_update_stats(xt, mt, None, 0.1)
    res_r = retorch.batch_norm_update_stats(xr, mr, None, 0.1)
    assert res_r[0].requires_grad == res_t[0].requires_grad
    close(mr, mt)
