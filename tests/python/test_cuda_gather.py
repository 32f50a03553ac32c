"""The CUDA kernels of the gather ops (Note [CUDA gather ops]): im2col and col2im (F.unfold and
F.fold), scatter_reduce in its functional, in-place and out= forms, _embedding_bag
(F.embedding_bag) and embedding_renorm_ (F.embedding's max_norm). Against torch on the cpu,
forward and backward, and retorch's cpu for the outputs only retorch defines (offset2bag,
bag_size, max_indices). Skipped without a GPU."""
import numpy as np
import pytest
import torch

import retorch
from test_cuda_ops import DTYPES, close, fresh_stats, ran_on_device, up  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")

F, G = retorch.nn.functional, torch.nn.functional


def both(x, dtype):
    """float64 numpy values as a retorch cuda tensor and a torch cpu tensor of dtype."""
    return (retorch.tensor(x).to(getattr(retorch, dtype)).to("cuda"),
            torch.tensor(x).to(getattr(torch, dtype)))


def longs(a):
    """int64 numpy values as a retorch cuda tensor and a torch cpu tensor."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    return retorch.from_numpy(a).to("cuda"), torch.from_numpy(a)


def normal(shape, seed, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def grad_of(t):
    """A tensor's gradient as a torch tensor (retorch's from the device)."""
    if isinstance(t, torch.Tensor):
        return t.grad
    return torch.tensor(t.grad.cpu().to(retorch.float64).numpy())


# (input shape, kernel_size, dilation, padding, stride)
FOLDS = [((2, 3, 9, 8), (3, 3), 1, 1, 1), ((1, 2, 10, 7), (2, 3), (2, 1), (1, 2), (2, 3)),
         ((4, 9, 11), 3, 2, 0, 2), ((0, 2, 6, 6), 2, 1, 0, 1), ((2, 1, 5, 5), 5, 1, 2, 1)]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("shape,k,d,p,s", FOLDS)
def test_unfold_and_fold_match_torch(shape, k, d, p, s, dtype, tol):
    r, t = both(normal(shape, 80), dtype)
    close(F.unfold(r, k, d, p, s), G.unfold(up(t), k, d, p, s).to(t.dtype), 0)
    if len(shape) == 4 and shape[0] > 0:  # a strided image (H and W swapped back)
        rt, tt = both(normal(shape[:2] + shape[:1:-1], 81), dtype)
        close(F.unfold(rt.transpose(2, 3), k, d, p, s),
              G.unfold(up(tt).transpose(2, 3), k, d, p, s).to(t.dtype), 0)
    cols_shape = tuple(G.unfold(up(t), k, d, p, s).shape)
    rc, tc = both(normal(cols_shape, 82), dtype)
    size = shape[-2:]
    close(F.fold(rc, size, k, d, p, s), G.fold(up(tc), size, k, d, p, s).to(t.dtype), tol * 4)
    if len(cols_shape) == 3 and cols_shape[0] > 1:  # strided columns
        close(F.fold(rc.transpose(1, 2).contiguous().transpose(1, 2), size, k, d, p, s),
              G.fold(up(tc), size, k, d, p, s).to(t.dtype), tol * 4)
    assert ran_on_device("aten::im2col") and ran_on_device("aten::col2im")


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
def test_unfold_and_fold_gradients(dtype, tol):
    k, d, p, s = (3, 2), (1, 2), (1, 1), (2, 1)
    r, t = both(normal((2, 3, 8, 9), 83), dtype)
    r.requires_grad_(True)
    t.requires_grad_(True)
    y, ty = F.unfold(r, k, d, p, s), G.unfold(t, k, d, p, s)
    rw, tw = both(normal(tuple(ty.shape), 84), dtype)
    (y * rw).sum().backward()
    (ty * tw).sum().backward()
    close(r.grad, grad_of(t), tol)
    rc, tc = both(normal(tuple(ty.shape), 85), dtype)
    rc.requires_grad_(True)
    tc.requires_grad_(True)
    z, tz = F.fold(rc, (8, 9), k, d, p, s), G.fold(tc, (8, 9), k, d, p, s)
    ro, to = both(normal((2, 3, 8, 9), 86), dtype)
    (z * ro).sum().backward()
    (tz * to).sum().backward()
    close(rc.grad, grad_of(tc), tol)
    assert ran_on_device("aten::im2col") and ran_on_device("aten::col2im")


def test_fold_arguments_the_cpu_refuses_raise_its_errors():
    r = retorch.zeros((2, 12, 5), device="cuda")
    with pytest.raises(RuntimeError, match="divisible"):
        F.fold(retorch.zeros((2, 10, 9), device="cuda"), (4, 4), 2)
    with pytest.raises(RuntimeError, match="sliding blocks"):
        F.fold(r, (4, 4), 2)
    with pytest.raises(RuntimeError, match="kernel size"):
        F.unfold(retorch.zeros((1, 2, 4, 4), device="cuda"), 0)


REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def scatter_case(dtype, reduce, dim, seed, exact=False):
    """self [5, 6, 7], an index smaller along the other dims and a bigger src (exact: of the
    index's shape, which torch 1.13's backward needs), as both."""
    rng = np.random.default_rng(seed)
    shape, ishape = [5, 6, 7], [4, 5, 6]
    ishape[dim] = 11
    sshape = list(ishape) if exact else [5, 6, 7]
    sshape[dim] = 11 if exact else 12
    if reduce == "prod":  # away from zero and overflow
        x, y = rng.uniform(0.6, 1.4, shape), rng.uniform(0.6, 1.4, sshape)
    else:
        x, y = rng.standard_normal(shape), rng.standard_normal(sshape)
    idx = rng.integers(0, shape[dim], ishape)
    return both(x, dtype), both(y, dtype), longs(idx)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_in_all_three_forms(dtype, tol, reduce, include_self):
    for dim in (0, 1, -1):
        (r, t), (rs, ts), (ri, ti) = scatter_case(dtype, reduce, dim, 90 + dim)
        want = up(t).scatter_reduce(dim, ti, up(ts), reduce, include_self=include_self)
        want = want.to(t.dtype)
        tol_ = tol if dtype in ("float32", "float64") else tol * 4  # 16-bit terms round each step
        close(r.scatter_reduce(dim, ri, rs, reduce, include_self=include_self), want, tol_)
        c = r.clone()
        c.scatter_reduce_(dim, ri, rs, reduce, include_self=include_self)
        close(c, want, tol_)
        out = retorch.empty((5, 6, 7), dtype=r.dtype, device="cuda")
        retorch.scatter_reduce(r, dim, ri, rs, reduce, include_self=include_self, out=out)
        close(out, want, tol_)
        # a strided self (its transpose, transposed back) and a strided src
        rt = r.transpose(0, 2).contiguous().transpose(0, 2)
        close(rt.scatter_reduce(dim, ri, rs.transpose(0, 2).contiguous().transpose(0, 2), reduce,
                                include_self=include_self), want, tol_)
        c = rt.clone().transpose(0, 2).contiguous().transpose(0, 2)
        c.scatter_reduce_(dim, ri, rs, reduce, include_self=include_self)
        close(c, want, tol_)
    assert ran_on_device("aten::scatter_reduce.two")
    assert ran_on_device("aten::scatter_reduce_.two")
    assert ran_on_device("aten::scatter_reduce.two_out")


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_nan_wins_amax_and_amin(reduce, include_self):
    (r, t), (rs, ts), (ri, ti) = scatter_case("float32", reduce, 1, 95)
    x, y = t.clone(), ts.clone()
    x[0, :, 0] = float("nan")
    y[1, 3, 2] = y[2, 0, 4] = float("nan")
    r, rs = retorch.tensor(x.numpy()).to("cuda"), retorch.tensor(y.numpy()).to("cuda")
    close(r.scatter_reduce(1, ri, rs, reduce, include_self=include_self),
          x.scatter_reduce(1, ti, y, reduce, include_self=include_self), 0)
    assert ran_on_device("aten::scatter_reduce.two")


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradients(reduce, include_self):
    (r, t), (rs, ts), (ri, ti) = scatter_case("float64", reduce, 1, 96, exact=True)
    for a in (r, t, rs, ts):
        a.requires_grad_(True)
    rg, tg = both(normal((5, 6, 7), 97), "float64")
    (r.scatter_reduce(1, ri, rs, reduce, include_self=include_self) * rg).sum().backward()
    (t.scatter_reduce(1, ti, ts, reduce, include_self=include_self) * tg).sum().backward()
    close(r.grad, grad_of(t), 1e-12)
    close(rs.grad, grad_of(ts), 1e-12)
    assert ran_on_device("aten::scatter_reduce.two")


def test_scatter_reduce_bad_arguments_raise_the_cpu_errors():
    r = retorch.zeros((4, 5), device="cuda")
    ri, _ = longs(np.zeros((2, 5)))
    with pytest.raises(RuntimeError, match="reduce argument"):
        r.scatter_reduce(0, ri, r, "median")
    with pytest.raises(RuntimeError, match="dtype"):
        r.scatter_reduce(0, ri, r.double(), "sum")


BAG_INDICES = [3, 0, 7, 7, 1, 9, 2, 2, 5, 4, 8, 0, 6, 3, 1]
BAG_OFFSETS = [0, 0, 3, 3, 4, 9, 9, 13]  # empty bags, and a last bag reaching the end


def bag_inputs(dtype, seed=100, nan=False, offsets=BAG_OFFSETS):
    w = normal((10, 9), seed)
    if nan:
        w[2, 4] = w[7, 0] = np.nan
    return both(w, dtype), longs(BAG_INDICES), longs(offsets)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 7])
def test_embedding_bag_matches_torch(dtype, tol, mode, include_last_offset, padding_idx):
    # (torch 1.13's float64 path corrupts memory when indices follow the last offset: here the
    # last offset is the end; the outputs test covers trailing indices against retorch's cpu)
    offsets = BAG_OFFSETS + [len(BAG_INDICES)] if include_last_offset else BAG_OFFSETS
    (rw, tw), (ri, ti), (ro, to) = bag_inputs(dtype, offsets=offsets)
    kw = dict(mode=mode, include_last_offset=include_last_offset, padding_idx=padding_idx)
    want = G.embedding_bag(ti, up(tw), to, **kw).to(tw.dtype)
    close(F.embedding_bag(ri, rw, ro, **kw), want, tol)
    close(F.embedding_bag(ri, rw.t().contiguous().t(), ro, **kw), want, tol)  # strided weight
    if mode == "sum":
        rp, tp = both(normal(len(BAG_INDICES), 101), dtype)
        close(F.embedding_bag(ri, rw, ro, per_sample_weights=rp, **kw),
              G.embedding_bag(ti, up(tw), to, per_sample_weights=up(tp), **kw).to(tw.dtype),
              tol * 2)
    # 2-d input: bags of equal size
    r2, t2 = longs(np.array(BAG_INDICES[:12]).reshape(4, 3))
    close(F.embedding_bag(r2, rw, mode=mode, padding_idx=padding_idx),
          G.embedding_bag(t2, up(tw), mode=mode, padding_idx=padding_idx).to(tw.dtype), tol)
    assert ran_on_device("aten::_embedding_bag")


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_outputs_match_retorch_cpu(mode, include_last_offset):
    """offset2bag, bag_size and max_indices are as retorch's cpu kernel gives them; NaN wins
    max mode as there."""
    (rw, _), (ri, _), (ro, _) = bag_inputs("float64", nan=mode == 2)
    rp = both(normal(len(BAG_INDICES), 102), "float64")[0] if mode == 0 else None
    args = (False, mode, False, rp, include_last_offset, 7)
    got = retorch._C._embedding_bag(rw, ri, ro, *args)
    want = retorch._C._embedding_bag(rw.cpu(), ri.cpu(), ro.cpu(),
                                     *args[:3], rp.cpu() if rp is not None else None, *args[4:])
    assert len(got) == len(want) == 4
    for g, w in zip(got, want):
        assert g.device.type == "cuda" and g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.cpu().numpy(), w.numpy(), rtol=1e-12, atol=1e-12)
    assert ran_on_device("aten::_embedding_bag")


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradients(mode):
    (rw, tw), (ri, ti), (ro, to) = bag_inputs("float64", seed=103)
    rw.requires_grad_(True)
    tw.requires_grad_(True)
    rg, tg = both(normal((len(BAG_OFFSETS), 9), 104), "float64")
    (F.embedding_bag(ri, rw, ro, mode=mode, padding_idx=7) * rg).sum().backward()
    (G.embedding_bag(ti, tw, to, mode=mode, padding_idx=7) * tg).sum().backward()
    close(rw.grad, grad_of(tw), 1e-12)
    if mode == "sum":  # and the per-sample weights'
        rp, tp = both(normal(len(BAG_INDICES), 105), "float64")
        rp.requires_grad_(True)
        tp.requires_grad_(True)
        (F.embedding_bag(ri, rw, ro, mode="sum", per_sample_weights=rp) * rg).sum().backward()
        (G.embedding_bag(ti, tw, to, mode="sum", per_sample_weights=tp) * tg).sum().backward()
        close(rp.grad, grad_of(tp), 1e-12)
    assert ran_on_device("aten::_embedding_bag")


def test_embedding_bag_bad_arguments_raise_the_cpu_errors():
    (rw, _), (ri, _), (ro, _) = bag_inputs("float32")
    rp = retorch.ones(len(BAG_INDICES), device="cuda")
    with pytest.raises(RuntimeError, match="per_sample_weights"):
        F.embedding_bag(ri, rw, ro, mode="max", per_sample_weights=rp)


def test_embedding_bag_sparse_warns_and_gives_torchs_gradient_dense():
    # retorch has no sparse tensors: sparse=True warns (once per op) and the gradient is dense,
    # holding the values of torch's sparse one.
    (rw, tw), (ri, ti), (ro, to) = bag_inputs("float64", seed=108)
    rw.requires_grad_(True)
    tw.requires_grad_(True)
    rg, tg = both(normal((len(BAG_OFFSETS), 9), 109), "float64")
    F._DENSE_WARNED.discard("embedding_bag")  # make the once-per-op warning due again
    with pytest.warns(UserWarning, match="sparse"):
        out = F.embedding_bag(ri, rw, ro, sparse=True)
    (out * rg).sum().backward()
    (G.embedding_bag(ti, tw, to, sparse=True) * tg).sum().backward()
    assert tw.grad.is_sparse and rw.grad.layout == retorch.strided
    close(rw.grad, tw.grad.to_dense(), 1e-12)
    assert ran_on_device("aten::_embedding_bag")


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0])
def test_embedding_max_norm_renorms_the_named_rows(dtype, tol, norm_type):
    (rw, tw), _, _ = bag_inputs(dtype, seed=106)
    ri, ti = longs([[3, 0, 7], [7, 3, 5]])  # repeated rows are renormed once
    tw = up(tw)
    y = F.embedding(ri, rw, max_norm=1.5, norm_type=norm_type)
    ty = G.embedding(ti, tw, max_norm=1.5, norm_type=norm_type)  # renorms tw in place
    close(rw, tw.to(getattr(torch, dtype)), tol)
    close(y, ty.to(getattr(torch, dtype)), tol)
    # a strided weight, renormed in place through its strides
    (rb, tb), _, _ = bag_inputs(dtype, seed=107)
    rt = rb.t().contiguous().t()
    retorch._C.embedding_renorm_(rt, ri.reshape(-1), 1.0, norm_type)
    tb = up(tb)
    G.embedding(ti, tb, max_norm=1.0, norm_type=norm_type)
    close(rt, tb.to(getattr(torch, dtype)), tol)
    assert ran_on_device("aten::embedding_renorm_")
