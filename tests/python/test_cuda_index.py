"""The CUDA index kernels against torch: sort/argsort/topk (CUB), gather/scatter/scatter_add,
advanced indexing and index_put (accumulate too), index_select, nonzero, and the composites that
run on them (flip, masked_select/masked_scatter, index_add, take/put). Skipped without a GPU."""
import numpy as np
import pytest
import torch

import retorch
from test_cuda_ops import fresh_stats, ran_on_device  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")


def cu(a):
    return retorch.from_numpy(np.ascontiguousarray(a)).to("cuda")


def host(t):
    """A retorch cuda tensor as a torch cpu tensor (through float64 for the 16-bit floats)."""
    assert t.device.type == "cuda"
    if t.dtype in (retorch.float16, retorch.bfloat16):
        return torch.from_numpy(t.cpu().to(retorch.float64).numpy())
    return torch.from_numpy(t.cpu().numpy())


def both(a, dtype):
    """numpy values as a retorch cuda tensor and a torch cpu tensor of dtype."""
    t = torch.from_numpy(np.ascontiguousarray(a)).to(getattr(torch, dtype))
    r = retorch.from_numpy(np.ascontiguousarray(a)).to(getattr(retorch, dtype)).to("cuda")
    return r, t


def same(got, want):
    w = want.double() if want.dtype in (torch.float16, torch.bfloat16) else want
    g = host(got)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert torch.equal(g.to(w.dtype), w) or torch.allclose(g.double(), w.double(), equal_nan=True,
                                                           rtol=0, atol=0), (g, w)


SORT_DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "int16",
               "bool"]


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_and_matches_torch(dtype, dim, descending):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2 if dtype == "bool" else 9, (6, 37, 5))  # many ties
    r, t = both(a, dtype)
    values, indices = retorch.sort(r, stable=True, dim=dim, descending=descending)
    tv, ti = torch.sort(t, stable=True, dim=dim, descending=descending)
    same(values, tv)
    same(indices, ti)
    same(retorch.argsort(r, dim=dim, descending=descending, stable=True),
         torch.argsort(t, dim=dim, descending=descending, stable=True))
    assert ran_on_device("aten::sort")


@pytest.mark.parametrize("n", [1, 1000, 70000])
def test_sort_of_one_long_row_and_nan_and_signed_zero(n):
    a = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    a[: min(n, 3)] = [np.nan, -0.0, 0.0][: min(n, 3)]
    r, t = both(a, "float32")
    for desc in (False, True):
        v, i = retorch.sort(r, stable=True, descending=desc)
        tv, ti = torch.sort(t, stable=True, descending=desc)
        same(v, tv)
        same(i, ti)
    # the non-stable overload sorts the same way
    same(retorch.sort(r)[0], torch.sort(t)[0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int64"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_and_indices(dtype, largest):
    rng = np.random.default_rng(3)
    # distinct values (one right answer; bfloat16 holds the integers up to 256 exactly)
    a = rng.permutation(256)[:200].reshape(10, 20) if dtype == "bfloat16" else \
        rng.permutation(40 * 50).reshape(40, 50)
    r, t = both(a, dtype)
    for dim, k in ((-1, 7), (0, a.shape[0]), (1, 0), (0, 1)):
        v, i = retorch.topk(r, k, dim=dim, largest=largest)
        tv, ti = torch.topk(t, k, dim=dim, largest=largest)
        same(v, tv)
        same(i, ti)
    assert ran_on_device("aten::topk")
    with pytest.raises(Exception, match="k"):
        retorch.topk(r, a.shape[1] + 1, dim=1)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_gather_and_scatter_along_each_dim(dtype):
    rng = np.random.default_rng(4)
    a = rng.integers(0, 5, (5, 6, 7))
    r, t = both(a, dtype)
    for dim in (0, 1, -1):
        n = a.shape[dim]
        idx = rng.integers(0, n, (3, 4, 5))
        ri, ti = cu(idx), torch.from_numpy(idx)
        same(retorch.gather(r, dim, ri), torch.gather(t, dim, ti))
        # unique targets per line along dim, so which of two writes wins does not matter
        perm = np.argsort(rng.random((5, 6, 7)), axis=dim)
        sl = tuple(slice(0, 3 if d == 0 else 4 if d == 1 else 5) for d in range(3))
        sl = tuple(slice(None) if d == (dim % 3) else sl[d] for d in range(3))
        u = np.ascontiguousarray(perm[sl])
        src = rng.integers(0, 5, u.shape)
        rs, ts = both(src, dtype)
        same(retorch.scatter(r, dim, cu(u), rs), torch.scatter(t, dim, torch.from_numpy(u), ts))
        x, tx = r.clone(), t.clone()
        x.scatter_(dim, cu(u), rs)
        tx.scatter_(dim, torch.from_numpy(u), ts)
        same(x, tx)
        same(retorch.scatter(r, dim, cu(u), 1), torch.scatter(t, dim, torch.from_numpy(u), 1))
    for op in ("aten::gather", "aten::scatter", "aten::scatter_"):
        assert ran_on_device(op)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12), ("int32", 0),
                                       ("int64", 0), ("bfloat16", 5e-2)])
def test_scatter_add_sums_repeated_indices(dtype, tol):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((8, 9)) if "float" in dtype else rng.integers(-9, 9, (8, 9))
    src = rng.standard_normal((20, 9)) if "float" in dtype else rng.integers(-9, 9, (20, 9))
    idx = rng.integers(0, 8, (20, 9))  # many repeats
    r, t = both(a, dtype)
    rs, ts = both(src, dtype)
    got = retorch.scatter_add(r, 0, cu(idx), rs)
    want = torch.scatter_add(t.double() if tol else t, 0, torch.from_numpy(idx),
                             ts.double() if tol else ts)
    assert torch.allclose(host(got).double(), want.double(), rtol=tol, atol=tol * 10)
    r.scatter_add_(0, cu(idx), rs)
    assert torch.allclose(host(r).double(), want.double(), rtol=tol, atol=tol * 10)
    assert ran_on_device("aten::scatter_add") and ran_on_device("aten::scatter_add_")


def test_gather_through_a_transposed_self_and_index_and_its_gradient():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((7, 9)).astype(np.float32)
    idx = rng.integers(0, 7, (9, 5))
    x = cu(a).requires_grad_(True)
    tx = torch.from_numpy(a).requires_grad_(True)
    got = retorch.gather(x.t(), 1, cu(idx).t().contiguous().t())
    want = torch.gather(tx.t(), 1, torch.from_numpy(idx).t().contiguous().t())
    same(got.detach(), want.detach())
    (got * got).sum().backward()
    (want * want).sum().backward()
    assert torch.allclose(host(x.grad), tx.grad, atol=1e-5)


def test_advanced_indexing_layouts():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 5, 6, 7)).astype(np.float32)
    r, t = cu(a), torch.from_numpy(a)
    i = rng.integers(-5, 5, (3,))  # negative indices count from the end
    j = rng.integers(0, 6, (2, 1))
    ri, ti, rj, tj = cu(i), torch.from_numpy(i), cu(j), torch.from_numpy(j)
    same(r[:, ri], t[:, ti])
    same(r[:, ri, rj], t[:, ti, tj])              # adjacent, broadcast to (2, 3)
    same(r[:, ri, :, rj[:, :1] % 7], t[:, ti, :, tj[:, :1] % 7])  # separated: index dims first
    same(r[ri % 4, :, rj], t[ti % 4, :, tj])
    same(r.transpose(1, 3)[:, rj % 7], t.transpose(1, 3)[:, tj % 7])  # a strided self
    cpu_index = retorch.from_numpy(np.array([3, 0, 3]))  # cpu indices into a cuda tensor
    same(r[cpu_index], t[torch.tensor([3, 0, 3])])
    m = a[:, :, 0, 0] > 0
    same(r[cu(m)], t[torch.from_numpy(m)])
    same(retorch.masked_select(r, cu(a > 0.5)), torch.masked_select(t, torch.from_numpy(a > 0.5)))
    assert ran_on_device("aten::index") and ran_on_device("aten::nonzero")


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float16", 1e-2), ("int64", 0)])
def test_index_put_with_and_without_accumulate(dtype, tol):
    rng = np.random.default_rng(8)
    a = rng.integers(-5, 5, (6, 7, 8))
    r, t = both(a, dtype)
    rows = np.array([5, 0, 2])
    v = rng.integers(-5, 5, (3, 8))
    rv, tv = both(v, dtype)
    x, tx = r.clone(), t.clone()
    x[cu(rows), 3] = rv
    tx[torch.from_numpy(rows), 3] = tv
    same(x, tx)
    rep = np.array([1, 4, 1, 1, 0])  # repeats add up
    vals = rng.integers(-5, 5, (5, 7, 8))
    rv2, tv2 = both(vals, dtype)
    got = retorch.index_put(r, [cu(rep)], rv2, accumulate=True)
    want = torch.index_put(t.double(), [torch.from_numpy(rep)], tv2.double(), accumulate=True)
    assert torch.allclose(host(got).double(), want, rtol=tol, atol=tol * 8)
    x = r.clone()
    x.index_put_([cu(rep)], rv2, accumulate=True)
    assert torch.allclose(host(x).double(), want, rtol=tol, atol=tol * 8)
    y, ty = r.clone(), t.clone()  # a broadcast value through a mask
    y[cu(a > 2)] = 7
    ty[torch.from_numpy(a > 2)] = 7
    same(y, ty)
    assert ran_on_device("aten::index_put") and ran_on_device("aten::index_put_")


def test_index_composites_run_on_the_device():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((5, 6, 7)).astype(np.float32)
    r, t = cu(a), torch.from_numpy(a)
    same(retorch.flip(r, [0, 2]), torch.flip(t, [0, 2]))
    same(retorch.index_select(r, 1, cu(np.array([5, 0, 0, 2]))),
         torch.index_select(t, 1, torch.tensor([5, 0, 0, 2])))
    same(retorch.index_select(r.transpose(0, 2), 2, cu(np.array([4, 1]))),
         torch.index_select(t.transpose(0, 2), 2, torch.tensor([4, 1])))
    src = rng.standard_normal((5, 3, 7)).astype(np.float32)
    got = r.index_add(1, cu(np.array([1, 1, 4])), cu(src), alpha=2)
    want = t.index_add(1, torch.tensor([1, 1, 4]), torch.from_numpy(src), alpha=2)
    assert torch.allclose(host(got), want, atol=1e-5)
    m = a > 0
    s = rng.standard_normal(a.size).astype(np.float32)
    same(retorch.masked_scatter(r, cu(m), cu(s)),
         torch.masked_scatter(t, torch.from_numpy(m), torch.from_numpy(s)))
    k = np.array([0, 209, 7, 7])
    same(retorch.take(r, cu(k)), torch.take(t, torch.from_numpy(k)))
    for op in ("aten::index_select", "aten::index_put", "aten::index", "aten::nonzero"):
        assert ran_on_device(op)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool", "float64"])
def test_nonzero_coordinates(dtype):
    rng = np.random.default_rng(10)
    a = rng.integers(-1, 2, (4, 1, 9, 3)).astype(np.float64)
    if dtype.startswith("float"):
        a[0, 0, 0, :] = [-0.0, np.nan, 0.0]  # -0.0 is zero, NaN is not
    r, t = both(a, dtype)
    same(retorch.nonzero(r), torch.nonzero(t))
    same(retorch.nonzero(r[:, 0, ::2]), torch.nonzero(t[:, 0, ::2]))  # a strided view
    same(retorch.nonzero(r[0, 0, 0, 0]), torch.nonzero(t[0, 0, 0, 0]))  # 0-dim
    same(retorch.nonzero(r[:0]), torch.nonzero(t[:0]))  # empty
    assert ran_on_device("aten::nonzero")


def test_bad_index_calls_raise_the_cpu_errors():
    x = cu(np.zeros((3, 4), np.float32))
    with pytest.raises(Exception, match="int64|Long|long"):
        retorch.gather(x, 0, cu(np.zeros((3, 4), np.float32)))
    with pytest.raises(Exception, match="shape|size|dimension"):
        retorch.gather(x, 0, cu(np.zeros((3, 5), np.int64)))
    with pytest.raises(Exception, match="mask|shape"):
        x[cu(np.ones(5, bool))]


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12), ("bfloat16", 2e-2)])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_gradients_on_the_device(dtype, tol, padding_idx):
    rng = np.random.default_rng(11)
    w = rng.standard_normal((10, 6))
    idx = np.array([[3, 1, 3, 9], [0, 3, 3, 7]])  # repeated rows add up
    g = rng.standard_normal((2, 4, 6))
    rw, tw = both(w, dtype)
    rg, tg = both(g, dtype)
    rw.requires_grad_(True)
    tw.requires_grad_(True)
    out = retorch.nn.functional.embedding(cu(idx), rw, padding_idx=padding_idx)
    (out * rg).sum().backward()
    want = torch.nn.functional.embedding(torch.from_numpy(idx), tw, padding_idx=padding_idx)
    (want * tg).sum().backward()
    np.testing.assert_allclose(host(rw.grad).numpy(), tw.grad.double().numpy(), rtol=tol,
                               atol=tol)
    assert ran_on_device("aten::embedding_dense_backward")
