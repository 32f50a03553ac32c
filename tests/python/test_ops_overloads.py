"""torch's overloads and forms that torch's OpInfo samples found missing or different: split with
a list of sizes, scatter's reduce argument, var/std(x, unbiased), torch.norm's 'fro' and 'nuc',
the Python 2 operator names, and fixes to matmul, integer baddbmm/addbmm, the transposed
convolution's input gradient and the native norms' statistics — each against torch."""
import warnings

import numpy as np
import pytest
import torch

import retorch

CUSTOM = {
    "test_split_with_a_list_of_sizes": ["split.sizes"],
    "test_scatter_with_reduce": ["scatter.reduce", "scatter.value_reduce"],
    "test_var_and_std_with_unbiased_alone": ["var.unbiased", "std.unbiased"],
}


def pair(values, requires_grad=False):
    values = np.asarray(values)
    return (torch.tensor(values, requires_grad=requires_grad),
            retorch.tensor(values, requires_grad=requires_grad))


def same(r, t, rtol=1e-6, atol=1e-6):
    if isinstance(t, (tuple, list)):
        assert len(r) == len(t)
        for a, b in zip(r, t):
            same(a, b, rtol, atol)
        return
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 (the exception is the outcome compared)
        return None, e


def test_split_with_a_list_of_sizes():
    t, r = pair(np.arange(30.).reshape(5, 6), requires_grad=True)
    for sizes, dim in (([1, 3, 1], 0), ((2, 4), 1), ([5], 0), ([0, 5], 0), ([2, 2, 2], -1)):
        tp, rp = torch.split(t, sizes, dim), retorch.split(r, sizes, dim)
        same(rp, tp)
        same(r.split(sizes, dim), t.split(sizes, dim))
        same(r.split(sizes, dim=dim), t.split(sizes, dim=dim))
    # gradients flow back through every piece
    w = [np.arange(k * 6.).reshape(k, 6) for k in (1, 3, 1)]
    tg = torch.autograd.grad(sum((p * torch.tensor(x)).sum()
                                 for p, x in zip(t.split([1, 3, 1]), w)), t)[0]
    rg = retorch.autograd.grad(sum((p * retorch.tensor(x)).sum()
                                   for p, x in zip(r.split([1, 3, 1]), w)), r)[0]
    same(rg, tg)
    # an int still splits into chunks of that size; sizes that do not add up raise as torch
    same(r.split(2), t.split(2))
    (_, te), (_, re) = outcome(lambda: t.split([1, 1])), outcome(lambda: r.split([1, 1]))
    assert type(re) is type(te) is RuntimeError


def test_scatter_with_reduce():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((3, 4))
    idx = np.array([[0, 1, 2, 0], [2, 2, 1, 0]])
    src = rng.standard_normal((2, 4))
    tb, rb = pair(base)
    ti, ri = pair(idx)
    ts, rs = pair(src)
    for reduce in ("add", "multiply"):
        same(retorch.scatter(rb, 0, ri, rs, reduce=reduce), torch.scatter(tb, 0, ti, ts, reduce=reduce))
        same(rb.scatter(0, ri, rs, reduce=reduce), tb.scatter(0, ti, ts, reduce=reduce))
        same(rb.scatter(0, ri, 1.5, reduce=reduce), tb.scatter(0, ti, 1.5, reduce=reduce))
        tc, rc = tb.clone(), rb.clone()
        tc.scatter_(1, ti, ts, reduce=reduce)
        rc.scatter_(1, ri, rs, reduce=reduce)
        same(rc, tc)
        tc, rc = tb.clone(), rb.clone()
        tc.scatter_(1, ti, 2.0, reduce=reduce)
        rc.scatter_(1, ri, 2.0, reduce=reduce)
        same(rc, tc)
    # integers: the value is the tensor's type
    ti64, ri64 = pair(np.arange(12).reshape(3, 4))
    same(ri64.scatter(0, ri, 3, reduce="multiply"), ti64.scatter(0, ti, 3, reduce="multiply"))
    (_, te), (_, re) = (outcome(lambda: tb.scatter(0, ti, ts, reduce="sum")),
                        outcome(lambda: rb.scatter(0, ri, rs, reduce="sum")))
    assert type(re) is type(te) is RuntimeError
    assert "reduce argument must be either add or multiply" in str(re)


def test_var_and_std_with_unbiased_alone():
    t, r = pair(np.arange(12.).reshape(3, 4) ** 1.5)
    for unbiased in (True, False):
        same(retorch.var(r, unbiased), torch.var(t, unbiased))
        same(retorch.std(r, unbiased), torch.std(t, unbiased))
        same(r.var(unbiased), t.var(unbiased))
        same(r.std(unbiased=unbiased), t.std(unbiased=unbiased))
        same(r.var(unbiased=unbiased), t.var(unbiased=unbiased))
        same(retorch.var_mean(r, unbiased), torch.var_mean(t, unbiased))
        same(retorch.std_mean(r, unbiased=unbiased), torch.std_mean(t, unbiased=unbiased))
    # the dim forms still take their dims
    same(r.var(1), t.var(1))
    same(r.std(0, True, True), t.std(0, True, True))
    same(r.var(), t.var())
    # gradients
    t2, r2 = pair(np.arange(6.) ** 2, requires_grad=True)
    same(retorch.autograd.grad(r2.std(False), r2)[0], torch.autograd.grad(t2.std(False), t2)[0])


@pytest.mark.parametrize("p,dim,keepdim", [("fro", None, False), ("fro", 1, True),
                                           ("fro", (0, 1), False), ("nuc", None, False),
                                           ("nuc", (0, 1), True), (None, None, False),
                                           (1, 0, False), (float("inf"), None, False),
                                           (3, (0, 1), True)])
def test_norm_takes_torchs_strings(p, dim, keepdim):
    rng = np.random.default_rng(1)
    t, r = pair(rng.standard_normal((4, 3)), requires_grad=True)
    tn, rn = torch.norm(t, p, dim, keepdim), retorch.norm(r, p, dim, keepdim)
    same(rn, tn)
    same(r.norm(p, dim, keepdim), t.norm(p, dim, keepdim))
    same(retorch.autograd.grad(rn.sum(), r)[0], torch.autograd.grad(tn.sum(), t)[0])


def test_norm_errors_as_torch():
    t, r = pair(np.ones((2, 3, 4)))
    for call in (lambda L, x: L.norm(x, "fro", dim=(0, 1, 2)), lambda L, x: L.norm(x, "nuc"),
                 lambda L, x: L.norm(x, "fro", dtype=L.float64), lambda L, x: L.norm(x, "abc"),
                 lambda L, x: L.norm(x, "nuc", dim=0)):
        (_, te), (_, re) = outcome(lambda: call(torch, t)), outcome(lambda: call(retorch, r))
        assert te is not None and type(re) is type(te), (te, re)
        assert str(re) == str(te)
    same(retorch.norm(r, 2, dtype=retorch.float32), torch.norm(t, 2, dtype=torch.float32))


def test_python2_operator_names():
    t, r = pair(np.array([1., 2., 4.]))
    same(r.__div__(2), t.__div__(2))
    same(r.__rdiv__(2), t.__rdiv__(2))
    tc, rc = t.clone(), r.clone()
    same(rc.__idiv__(4), tc.__idiv__(4))
    same(rc, tc)
    t1, r1 = pair(np.array([3.]))
    assert r1.__nonzero__() == t1.__nonzero__()
    same(list(reversed(r)), list(reversed(t)))
    with pytest.raises(TypeError, match="does not support deleting items"):
        del r[0]


def test_matmul_with_an_empty_inner_dim():
    for a, b in (((5, 5, 0), (0, 5)), ((2, 0), (0, 3)), ((3, 4, 0), (0,)), ((0, 5), (5, 5, 2))):
        ta, ra = pair(np.ones(a))
        tb, rb = pair(np.ones(b))
        same(retorch.matmul(ra, rb), torch.matmul(ta, tb))


def test_integer_batched_products_take_integer_scalars():
    i = np.arange(6).reshape(1, 2, 3)
    j = np.arange(6).reshape(1, 3, 2)
    for beta, alpha in ((0.2, 0.6), (1.7, 2.5), (2, 3), (0, 1)):
        ts, rs = pair(np.ones((1, 2, 2), dtype=np.int64))
        same(retorch.baddbmm(rs, retorch.tensor(i), retorch.tensor(j), beta=beta, alpha=alpha),
             torch.baddbmm(ts, torch.tensor(i), torch.tensor(j), beta=beta, alpha=alpha))
        same(retorch.addbmm(rs[0], retorch.tensor(i), retorch.tensor(j), beta=beta, alpha=alpha),
             torch.addbmm(ts[0], torch.tensor(i), torch.tensor(j), beta=beta, alpha=alpha))
    # floats keep their fractional scalars
    tf, rf = pair(np.ones((1, 2, 2)))
    same(retorch.baddbmm(rf, retorch.tensor(i * 1.), retorch.tensor(j * 1.), beta=0.2, alpha=0.6),
         torch.baddbmm(tf, torch.tensor(i * 1.), torch.tensor(j * 1.), beta=0.2, alpha=0.6))


@pytest.mark.parametrize("dims", [2, 3])
def test_transposed_convolution_gradient_with_output_padding_past_the_stride(dims):
    # output_padding may reach the dilation, so the output fits one more stride than the input
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 2) + (4,) * dims)
    w = rng.standard_normal((2, 2, 4, 5, 6)[:2 + dims])
    kw = dict(stride=(3, 2, 1)[:dims], padding=(1, 2, 3)[:dims],
              output_padding=(2, 3, 1)[:dims], groups=2, dilation=(4,) * dims)
    tx, rx = pair(x, True)
    tw, rw = pair(w, True)
    tb, rb = pair(rng.standard_normal(4), True)
    tf = getattr(torch.nn.functional, f"conv_transpose{dims}d")
    rf = getattr(retorch.nn.functional, f"conv_transpose{dims}d")
    ty, ry = tf(tx, tw, tb, **kw), rf(rx, rw, rb, **kw)
    same(ry, ty, 1e-9, 1e-9)
    g = rng.standard_normal(tuple(ty.shape))
    tg = torch.autograd.grad(ty, (tx, tw, tb), torch.tensor(g))
    rg = retorch.autograd.grad(ry, (rx, rw, rb), retorch.tensor(g))
    same(rg, tg, 1e-9, 1e-9)
    if dims == 2:
        assert retorch.autograd.gradcheck(lambda a, b: rf(a, b, None, **kw), (rx, rw))
        assert retorch.autograd.gradgradcheck(lambda a, b: rf(a, b, None, **kw), (rx, rw))


def test_native_norm_statistics_carry_no_gradient():
    x = np.random.default_rng(3).standard_normal((4, 3))
    t, r = pair(x, True)
    for L, v in ((torch, t), (retorch, r)):
        out = L.native_layer_norm(v, [3], None, None, 1e-5)
        assert [o.requires_grad for o in out] == [True, False, False]
        out = L.native_batch_norm(v, None, None, None, None, True, 0.1, 1e-5)
        assert [o.requires_grad for o in out] == [True, False, False]


def test_gather_and_scatter_take_an_empty_index_of_any_dtype():
    t, r = pair(np.zeros(5))
    for dt in ("uint8", "int32"):
        ti = torch.tensor([], dtype=getattr(torch, dt))
        ri = retorch.tensor([], dtype=getattr(retorch, dt))
        same(retorch.gather(r, 0, ri), torch.gather(t, 0, ti))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same(retorch.scatter(r, 0, ri, retorch.ones(0, dtype=retorch.float64)),
                 torch.scatter(t, 0, ti, torch.ones(0, dtype=torch.float64)))
    (_, te), (_, re) = (outcome(lambda: torch.gather(t, 0, torch.tensor([1], dtype=torch.uint8))),
                        outcome(lambda: retorch.gather(r, 0, retorch.tensor([1], dtype=retorch.uint8))))
    assert type(re) is type(te) is RuntimeError
