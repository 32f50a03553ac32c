"""The CUDA backend's op kernels (pointwise ops, device copies, cuBLAS products) against PyTorch on
the cpu, on a machine with a CUDA device; skipped, never passed, without one. Each test also checks
that the op ran on the device: the device fallback counted no call of it."""
import time

import numpy as np
import pytest
import torch

import retorch

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")

DTYPES = [("float32", 1e-5), ("float64", 1e-12), ("float16", 2e-3), ("bfloat16", 1.6e-2)]


def rt_dtype(name):
    return getattr(retorch, name)


def t_dtype(name):
    return getattr(torch, name)


def pair(shape, dtype, seed=0, positive=False, transpose=False):
    """The same values as a retorch cuda tensor and a torch cpu tensor (float32 for 16-bit
    dtypes, which the oracle computes in and rounds from, as the CUDA kernels do)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float64)
    if positive:
        x = np.abs(x) + 0.1
    t = torch.tensor(x).to(t_dtype(dtype))
    r = retorch.tensor(x).to(rt_dtype(dtype)).to("cuda")
    if transpose:
        t, r = t.transpose(0, 1), r.transpose(0, 1)
    return r, t


def up(t):
    """The oracle's precision: float64 stays, other dtypes compute in float32."""
    return t if t.dtype == torch.float64 else t.float()


def close(got, want, tol):
    assert got.device.type == "cuda"
    g = torch.tensor(got.detach().cpu().to(retorch.float64).numpy())
    w = want.to(torch.float64)
    assert g.shape == w.shape
    assert torch.allclose(g, w, rtol=tol, atol=tol, equal_nan=True), (g - w).abs().max()


def ran_on_device(op):
    return not any(s["op"] == op for s in retorch.device_fallback_stats())


@pytest.fixture(autouse=True)
def fresh_stats():
    retorch.reset_device_fallback_stats()
    yield


UNARY = [("neg", {}), ("abs", {}), ("exp", {}), ("log", {"positive": True}),
         ("sqrt", {"positive": True}), ("rsqrt", {"positive": True}), ("sin", {}), ("cos", {}),
         ("tanh", {}), ("sigmoid", {}), ("relu", {}), ("reciprocal", {"positive": True}),
         ("log1p", {"positive": True}), ("expm1", {}), ("erf", {})]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("name,kw", UNARY)
def test_unary_ops_in_all_three_variants(name, kw, dtype, tol):
    r, t = pair((37, 65), dtype, positive=kw.get("positive", False), transpose=True)
    want = getattr(torch, name)(up(t)).to(t.dtype)
    close(getattr(retorch, name)(r), want, tol)
    out = retorch.empty((65, 37), dtype=rt_dtype(dtype), device="cuda")
    if name != "relu":  # relu has no out= variant (as in PyTorch)
        getattr(retorch, name)(r, out=out)
        close(out, want, tol)
    c = r.clone()
    getattr(c, name + "_")()
    close(c, want, tol)
    assert ran_on_device(f"aten::{name}")


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_activations_with_arguments(dtype, tol):
    F, G = retorch.nn.functional, torch.nn.functional
    r, t = pair((300, 17), dtype, seed=3)
    close(F.silu(r), G.silu(up(t)).to(t.dtype), tol)
    for approximate in ("none", "tanh"):
        close(F.gelu(r, approximate=approximate),
              G.gelu(up(t), approximate=approximate).to(t.dtype), tol)
    with pytest.raises(RuntimeError, match="approximate"):
        F.gelu(r, approximate="bogus")


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("a_shape,b_shape", [((40, 50), (40, 50)), ((40, 50), (50,)),
                                             ((3, 1, 5), (1, 4, 5)), ((7, 6), ())])
def test_binary_ops_broadcast(a_shape, b_shape, dtype, tol):
    ra, ta = pair(a_shape, dtype, seed=1)
    rb, tb = pair(b_shape, dtype, seed=2, positive=True)
    for name in ("add", "sub", "mul", "div", "maximum", "minimum"):
        want = getattr(torch, name)(up(ta), up(tb)).to(ta.dtype)
        close(getattr(retorch, name)(ra, rb), want, tol)
        assert ran_on_device(f"aten::{name}.Tensor") and ran_on_device(f"aten::{name}")
    close(retorch.add(ra, rb, alpha=2.5), torch.add(up(ta), up(tb), alpha=2.5).to(ta.dtype),
          tol)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_binary_ops_on_the_device(dtype):
    """int32/int64 add and sub (integral alpha), mul, maximum, minimum and the comparisons run
    on the device with torch's wrapping and broadcasting; true division and float scalars
    promote to floats through the fallback, as before."""
    rng = np.random.default_rng(41)
    big = 2**31 - 5 if dtype == "int32" else 2**62
    cases = [((40, 50), (50,)), ((3, 1, 5), (1, 4, 5)), ((7, 6), ())]
    for a_shape, b_shape in cases:
        x = rng.integers(-big, big, a_shape, dtype=np.int64)
        y = rng.integers(-big, big, b_shape, dtype=np.int64)
        ta, tb = torch.tensor(x).to(t_dtype(dtype)), torch.tensor(y).to(t_dtype(dtype))
        ra, rb = [retorch.tensor(t.numpy()).to("cuda") for t in (ta, tb)]
        for name in ("add", "sub", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
                     "ge"):
            got = getattr(retorch, name)(ra, rb)
            want = getattr(torch, name)(ta, tb)
            assert got.device.type == "cuda" and str(got.dtype).split(".")[-1] == \
                str(want.dtype).split(".")[-1], name
            np.testing.assert_array_equal(got.cpu().numpy(), want.numpy(), err_msg=name)
        np.testing.assert_array_equal(retorch.sub(ra, rb, alpha=3).cpu().numpy(),
                                      torch.sub(ta, tb, alpha=3).numpy())
        np.testing.assert_array_equal((ra * 7 + 2).cpu().numpy(), (ta * 7 + 2).numpy())
        if np.broadcast_shapes(a_shape, b_shape) == a_shape:  # (in place: self's shape)
            c = ra.clone()
            c.add_(rb)
            np.testing.assert_array_equal(c.cpu().numpy(), (ta + tb).numpy())
    for op in ("aten::add.Tensor", "aten::add_.Tensor", "aten::mul.Tensor", "aten::sub.Tensor",
               "aten::maximum", "aten::lt.Tensor"):
        assert ran_on_device(op), op
    close(ra * 0.5, ta * 0.5, 1e-6)  # a float scalar promotes to float32 (the fallback)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("n,offset", [(1027, 0), (1027, 1), (4096, 2), (3, 0)])
def test_contiguous_operands_four_at_a_time_with_tails_and_misaligned_views(n, offset, dtype,
                                                                            tol):
    # Contiguous aligned operands take the four-element vector kernels (Note [Contiguous
    # pointwise kernels]), n % 4 left for a tail; a view starting `offset` elements in is not
    # aligned for them and takes the strided kernels. Both give torch's values.
    ra, ta = pair((n + offset,), dtype, seed=31)
    rb, tb = pair((n + offset,), dtype, seed=32, positive=True)
    ra, ta, rb, tb = ra[offset:], ta[offset:], rb[offset:], tb[offset:]
    close(ra + rb, (up(ta) + up(tb)).to(ta.dtype), tol)
    close(ra * 3, (up(ta) * 3).to(ta.dtype), tol)
    close(retorch.sub(ra, rb, alpha=0.5), torch.sub(up(ta), up(tb), alpha=0.5).to(ta.dtype), tol)
    close(ra.tanh(), up(ta).tanh().to(ta.dtype), tol)
    got = ra < rb
    assert got.dtype == retorch.bool
    assert np.array_equal(got.cpu().numpy(), (up(ta) < up(tb)).numpy())
    out = retorch.empty((n,), dtype=rt_dtype(dtype), device="cuda")
    retorch.exp(ra, out=out)
    close(out, up(ta).exp().to(ta.dtype), tol)
    assert ran_on_device("aten::add.Tensor") and ran_on_device("aten::tanh")
    assert ran_on_device("aten::empty")  # device memory from the allocator, not a host copy


def test_python_numbers_cpu_scalars_and_promotion():
    r, t = pair((64, 33), "float32", seed=4)
    close(r * 2 + 1, t * 2 + 1, 1e-6)
    close(r / retorch.tensor(3.0), t / torch.tensor(3.0), 1e-6)
    h, th = pair((64, 33), "float16", seed=5)
    got = h + r  # float16 + float32 -> float32, converted on the device
    assert got.dtype == retorch.float32
    close(got, up(th) + t, 1e-3)
    assert ran_on_device("aten::add.Tensor") and ran_on_device("aten::mul.Tensor")


def test_inplace_and_out_binary_ops_write_their_target():
    r, t = pair((20, 30), "float32", seed=6)
    rb, tb = pair((30,), "float32", seed=7)
    c = r.clone()
    c.add_(rb, alpha=-1.5)
    close(c, t.add(tb, alpha=-1.5), 1e-6)
    out = retorch.empty((20, 30), device="cuda")
    retorch.mul(r, rb, out=out)
    close(out, t * tb, 1e-6)
    view = r.clone()[:, ::2]  # a strided in-place target
    view.mul_(2.0)
    close(view, t[:, ::2] * 2, 1e-6)


def test_unsupported_calls_still_run_through_the_fallback():
    i = retorch.arange(10).to("cuda")  # cumsum: no CUDA kernel here yet
    assert retorch.cumsum(i, 0).cpu().tolist() == np.cumsum(np.arange(10)).tolist()
    assert i.cumsum(0).device.type == "cuda"
    assert not ran_on_device("aten::cumsum")


def test_device_copies_convert_and_make_contiguous():
    r, t = pair((33, 47), "float32", seed=8, transpose=True)
    close(r.contiguous(), t.contiguous(), 0)
    for name, tol in DTYPES:
        close(r.to(rt_dtype(name)), t.to(t_dtype(name)), 0)
    dst = retorch.zeros((5, 33, 47), device="cuda")
    dst.copy_(r.transpose(0, 1))
    close(dst, t.transpose(0, 1).expand(5, 33, 47), 0)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float64", 1e-10), ("float16", 1e-2),
                                       ("bfloat16", 5e-2)])
def test_matrix_products_with_transposed_and_sliced_operands(dtype, tol):
    assert not retorch.backends.cuda.matmul.allow_tf32
    a, ta = pair((70, 130), dtype, seed=9)
    b, tb = pair((130, 90), dtype, seed=10)
    ref = up
    close(retorch.mm(a, b), (ref(ta) @ ref(tb)).to(ta.dtype), tol)
    close(retorch.mm(b.t(), a.t()), (ref(tb).t() @ ref(ta).t()).to(ta.dtype), tol)
    close(retorch.mm(a[:, ::2], b[::2]), (ref(ta)[:, ::2] @ ref(tb)[::2]).to(ta.dtype), tol)
    x, tx = pair((6, 40, 30), dtype, seed=11)
    y, ty = pair((6, 30, 20), dtype, seed=12)
    close(retorch.bmm(x, y), (ref(tx) @ ref(ty)).to(tx.dtype), tol)
    close(retorch.bmm(x, y.transpose(1, 2).contiguous().transpose(1, 2)),
          (ref(tx) @ ref(ty)).to(tx.dtype), tol)
    bias, tbias = pair((90,), dtype, seed=13)
    close(retorch.addmm(bias, a, b, beta=0.5, alpha=2.0),
          torch.addmm(ref(tbias), ref(ta), ref(tb), beta=0.5, alpha=2.0).to(ta.dtype), tol)
    for op in ("aten::mm", "aten::bmm", "aten::addmm"):
        assert ran_on_device(op)


def test_product_edge_cases():
    a, ta = pair((8, 0), "float32")
    b, tb = pair((0, 5), "float32")
    close(retorch.mm(a, b), ta @ tb, 0)  # zeros
    nan = retorch.full((3, 4), float("nan"), device="cuda")
    x, tx = pair((3, 6), "float32", seed=14)
    y, ty = pair((6, 4), "float32", seed=15)
    close(retorch.addmm(nan, x, y, beta=0), tx @ ty, 1e-5)  # beta = 0 ignores NaNs in self
    out = retorch.empty((3, 4), device="cuda")
    retorch.mm(x, y, out=out)
    close(out, tx @ ty, 1e-5)
    with pytest.raises(RuntimeError, match="mm"):
        retorch.mm(x, x)


def test_small_training_step_gradients_match_torch():
    x, tx = pair((64, 128), "float32", seed=17)
    w, tw = pair((128, 128), "float32", seed=18)
    w.requires_grad_(True)
    tw.requires_grad_(True)
    (x @ w).relu().sum().backward()
    (tx @ tw).relu().sum().backward()
    close(w.grad, tw.grad, 1e-3)
    assert ran_on_device("aten::mm") and ran_on_device("aten::relu")


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (-1, False), (0, True), ((0, 2), False),
                                         ((1,), True)])
def test_reductions_over_any_dims(dim, keepdim, dtype, tol):
    r, t = pair((6, 50, 33), dtype, seed=19)
    f = up(t)
    dims = list(range(3)) if dim is None else dim
    for name in ("sum", "mean", "amax", "amin"):
        got = getattr(retorch, name)(r, dims, keepdim=keepdim)
        want = getattr(torch, name)(f, dims, keepdim=keepdim).to(t.dtype)
        close(got, want, tol * 8 if name in ("sum", "mean") else 0)
    close(retorch.sum(r, dims, dtype=retorch.float64), torch.sum(f.double(), dims), 1e-2)
    for op in ("aten::sum.dim_IntList", "aten::mean.dim", "aten::amax", "aten::amin"):
        assert ran_on_device(op)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_argmax_argmin_on_the_device(dtype):
    """Indices along each dim, of the flattened tensor, with keepdim, of a strided input; ties
    give the first index, NaN counts as the extreme (rows of 1000 cross the block's 256
    threads), as torch's cpu kernels."""
    r, t = pair((6, 50, 33), dtype, seed=23)
    x = np.round(np.random.default_rng(24).standard_normal((4, 1000)) * 2)  # many ties
    x[1, 700], x[2, 3], x[2, 900] = np.nan, np.nan, np.nan
    x[3, :] = -np.inf
    cases = [(r, t), (retorch.tensor(x).to(rt_dtype(dtype)).to("cuda"),
                      torch.tensor(x).to(t_dtype(dtype))),
             (r.transpose(0, 2), t.transpose(0, 2))]
    for rr, tt in cases:
        for name in ("argmax", "argmin"):
            for dim in [None] + list(range(rr.dim())) + [-1]:
                for keepdim in ([False] if dim is None else [False, True]):
                    got = getattr(retorch, name)(rr, dim, keepdim)
                    want = getattr(torch, name)(tt, dim, keepdim)
                    assert got.device.type == "cuda" and got.dtype == retorch.int64
                    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy(),
                                                  err_msg=f"{name} dim={dim} keepdim={keepdim}")
    assert ran_on_device("aten::argmax") and ran_on_device("aten::argmin")
    with pytest.raises(IndexError):
        retorch.argmax(r, 3)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_max_min_and_clone_on_the_device(dtype):
    """max/min of all elements and along a dim (values and indices; NaN is the extreme, ties the
    first index, as torch's cpu kernels), and clone of a strided tensor, without the fallback."""
    r, t = pair((6, 50, 33), dtype, seed=29)
    x = np.round(np.random.default_rng(30).standard_normal((4, 700)) * 2)  # many ties
    x[1, 500], x[3, 3] = np.nan, np.nan
    cases = [(r, t), (r.transpose(0, 2), t.transpose(0, 2)),
             (retorch.tensor(x).to(rt_dtype(dtype)).to("cuda"),
              torch.tensor(x).to(t_dtype(dtype)))]
    for rr, tt in cases:
        for name in ("max", "min"):
            close(getattr(rr, name)(), getattr(tt, name)(), 0)
            for dim in list(range(rr.dim())) + [-1]:
                for keepdim in (False, True):
                    got = getattr(rr, name)(dim, keepdim)
                    want = getattr(tt, name)(dim, keepdim)
                    close(got.values, want.values, 0)
                    assert got.indices.device.type == "cuda"
                    np.testing.assert_array_equal(got.indices.cpu().numpy(), want.indices.numpy())
        c = rr.clone()
        assert c.device.type == "cuda" and c.shape == rr.shape
        close(c, tt, 0)
    for op in ("aten::max", "aten::min", "aten::max.dim", "aten::min.dim", "aten::clone"):
        assert ran_on_device(op), op
    with pytest.raises(RuntimeError):
        retorch.zeros(0, 3, device="cuda").max()  # the cpu's error, through the fallback


def test_reduction_edge_cases():
    e, te = pair((4, 0), "float32")
    close(retorch.sum(e, [1]), torch.sum(te, [1]), 0)
    close(retorch.mean(e, [1]), torch.mean(te, [1]), 0)  # NaN
    with pytest.raises(IndexError, match="amax"):
        retorch.amax(e, [1])
    n = retorch.tensor([[1.0, float("nan"), 3.0]]).to("cuda")
    assert np.isnan(retorch.amax(n, [1]).cpu().item())
    r, t = pair((5, 7), "float32", seed=20, transpose=True)  # strided input
    close(r.sum(0), t.sum(0), 1e-5)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_and_log_softmax(dim, dtype, tol):
    r, t = pair((9, 300, 4), dtype, seed=21)
    F, G = retorch.nn.functional, torch.nn.functional
    close(F.softmax(r, dim), G.softmax(up(t), dim).to(t.dtype), tol)
    close(F.log_softmax(r, dim), G.log_softmax(up(t), dim).to(t.dtype), tol * 4)
    assert ran_on_device("aten::softmax.int") and ran_on_device("aten::log_softmax.int")
    inf = retorch.full((2, 5), float("-inf"), device="cuda")
    assert np.isnan(F.softmax(inf, -1).cpu().numpy()).all()


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_rows_in_registers_and_looping_rows_agree_with_torch(dtype, tol):
    """Row lengths around each register-cache size (Note [Rows in registers]) and past the
    largest (the looping kernels), rows that are not 16-byte vectors (odd lengths, an offset
    start), for softmax, log_softmax and layer_norm with an affine."""
    F, G = retorch.nn.functional, torch.nn.functional
    for cols in (1, 7, 2048, 2056, 4097, 8192, 8193, 12000):
        r, t = pair((3, cols + 1), dtype, seed=cols)
        for rr, tt in ((r[:, :cols].contiguous(), t[:, :cols]),
                       (r.reshape(-1)[1:1 + 3 * cols].reshape(3, cols),  # starts one element in
                        t.reshape(-1)[1:1 + 3 * cols].reshape(3, cols))):
            close(F.softmax(rr, -1), G.softmax(up(tt), -1).to(tt.dtype), tol)
            close(F.log_softmax(rr, -1), G.log_softmax(up(tt), -1).to(tt.dtype), tol * 4)
            w, tw = pair((cols,), dtype, seed=cols + 1)
            close(F.layer_norm(rr, [cols], w, w, 1e-5),
                  G.layer_norm(up(tt), [cols], up(tw), up(tw), 1e-5).to(tt.dtype), tol * 8)
    assert ran_on_device("aten::softmax.int") and ran_on_device("aten::native_layer_norm")


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_layer_norm_forward_and_gradients(dtype, tol):
    x, tx = pair((12, 7, 96), dtype, seed=22)
    w, tw = pair((7, 96), dtype, seed=23)
    b, tb = pair((7, 96), dtype, seed=24)
    F, G = retorch.nn.functional, torch.nn.functional
    close(F.layer_norm(x, [7, 96], w, b, 1e-5),
          G.layer_norm(up(tx), [7, 96], up(tw), up(tb), 1e-5).to(tx.dtype), tol * 4)
    close(F.layer_norm(x, [96]), G.layer_norm(up(tx), [96]).to(tx.dtype), tol * 4)
    assert ran_on_device("aten::native_layer_norm")
    if dtype in ("float32", "float64"):  # the backward kernels, weight and bias too
        for t in (x, w, b, tx, tw, tb):
            t.requires_grad_(True)
        gr, tg = pair((12, 7, 96), dtype, seed=29)
        (F.layer_norm(x, [7, 96], w, b) * gr).sum().backward()
        (G.layer_norm(tx, [7, 96], tw, tb) * tg).sum().backward()
        for got, want in ((x.grad, tx.grad), (w.grad, tw.grad), (b.grad, tb.grad)):
            close(got, want, max(tol, 1e-10) * 100)
        assert ran_on_device("aten::_layer_norm_backward_input")
        assert ran_on_device("aten::_layer_norm_backward_weight")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int64", "int32",
                                   "int8", "bool"])
def test_factories_fill_on_the_device(dtype):
    z = retorch.zeros((3, 5), dtype=rt_dtype(dtype), device="cuda")
    o = retorch.ones((3, 5), dtype=rt_dtype(dtype), device="cuda")
    f = retorch.full((3, 5), 7, dtype=rt_dtype(dtype), device="cuda") if dtype != "bool" else o
    v = o.clone()[:, ::2]
    v.zero_()
    assert z.cpu().to(retorch.float64).numpy().tolist() == [[0.0] * 5] * 3
    assert o.cpu().to(retorch.float64).numpy().tolist() == [[1.0] * 5] * 3
    if dtype != "bool":
        assert f.cpu().to(retorch.float64).numpy().tolist() == [[7.0] * 5] * 3
    assert v.cpu().to(retorch.float64).numpy().tolist() == [[0.0] * 3] * 3
    assert ran_on_device("aten::fill_.Scalar") and ran_on_device("aten::zero_")


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_comparisons_and_threshold_backward(dtype, tol):
    ra, ta = pair((30, 40), dtype, seed=29)
    rb, tb = pair((40,), dtype, seed=30)
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        got = getattr(retorch, name)(ra, rb)
        assert got.dtype == retorch.bool
        assert (got.cpu().numpy() == getattr(torch, name)(ta, tb).numpy()).all()
        got = getattr(retorch, name)(ra, 0.25)
        assert (got.cpu().numpy() == getattr(torch, name)(ta, 0.25).numpy()).all()
        assert ran_on_device(f"aten::{name}.Tensor")
    x, tx = pair((64, 33), dtype, seed=31)
    x.requires_grad_(True)
    tx = up(tx).requires_grad_(True)
    (x.relu() * 2).sum().backward()
    (tx.relu() * 2).sum().backward()
    close(x.grad, tx.grad.to(t_dtype(dtype)), tol)
    assert ran_on_device("aten::threshold_backward")


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-10), ("bfloat16", 3e-2)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted,smoothing", [(False, 0.0), (True, 0.0), (True, 0.1)])
def test_cross_entropy_forward_and_backward(dtype, tol, reduction, weighted, smoothing):
    x, tx = pair((37, 10), dtype, seed=35)
    tgt = np.random.default_rng(36).integers(0, 10, 37)
    tgt[[3, 8]] = -100  # ignored rows
    w, tw = pair((10,), dtype, seed=37, positive=True) if weighted else (None, None)
    x.requires_grad_(True)
    tx = up(tx).requires_grad_(True)
    got = retorch.nn.functional.cross_entropy(x, cu(tgt), weight=w, reduction=reduction,
                                              label_smoothing=smoothing)
    want = torch.nn.functional.cross_entropy(tx, torch.from_numpy(tgt), reduction=reduction,
                                             weight=None if tw is None else up(tw),
                                             label_smoothing=smoothing)
    close(got, want.detach().to(t_dtype(dtype)), tol * 4)
    (got.sum() * 3).backward()
    (want.sum() * 3).backward()
    close(x.grad, tx.grad.to(t_dtype(dtype)), tol * 4)
    assert ran_on_device("aten::_cross_entropy_fused")
    assert ran_on_device("aten::_cross_entropy_fused_backward")


def test_mlp_training_matches_torch_and_its_ops_run_on_the_device():
    rng = np.random.default_rng(38)
    x = rng.standard_normal((100, 64)).astype(np.float32)
    y = rng.integers(0, 10, 100)
    models = []
    for lib in (retorch, torch):
        lib.manual_seed(0)
        models.append(lib.nn.Sequential(lib.nn.Linear(64, 32), lib.nn.ReLU(),
                                        lib.nn.Linear(32, 10)))
    with torch.no_grad():  # the same initial weights
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    models[0].to("cuda")
    data = [(cu(x), cu(y)), (torch.from_numpy(x), torch.from_numpy(y))]
    for (lib, m), (xb, yb) in zip(zip((retorch, torch), models), data):
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            lib.nn.functional.cross_entropy(m(xb), yb).backward()
            opt.step()
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        close(p, q.detach(), 1e-4)
    for op in ("aten::addmm", "aten::mm", "aten::relu", "aten::threshold_backward",
               "aten::sum.dim_IntList", "aten::_cross_entropy_fused",
               "aten::_cross_entropy_fused_backward"):
        assert ran_on_device(op), op


def test_profiler_times_cuda_kernels_on_the_device():
    a = retorch.randn(2048, 2048).to("cuda")
    with retorch.profiler.profile() as p:
        for _ in range(3):
            b = retorch.mm(a, a)
        b.cpu()
    kernels = [e for e in p.events() if e["kind"] == "kernel" and e["op"] == "aten::mm"]
    assert len(kernels) == 3
    # 17 GFLOP of products take well over a microsecond on any GPU, and the launch returns first.
    assert all(e["device_ns"] > 1000 for e in kernels)
    summary = p.kernel_summary()
    assert "Time %" in summary and "mm" in summary


def test_profiler_memory_view_has_the_devices_allocations():
    # The CUDA caching allocator reports to the profiler's memory view, as a "cuda:0" track.
    with retorch.profiler.profile(profile_memory=True) as p:
        x = retorch.empty(1 << 20, device="cuda")
        del x
    dev = [e for e in p.memory_events() if e[4] == "cuda:0"]
    assert any(e[1] >= 4 << 20 for e in dev) and any(e[1] <= -(4 << 20) for e in dev), dev


def test_events_time_the_device_and_synchronize_waits_for_it():
    # Kernels launch asynchronously: the host is back long before eight 4096^3 float32 products
    # (about 1.1 TFLOP) finish, so events timed on the host clock would read far less than the
    # device took; CUDA events read the device's time, and synchronize() waits for it.
    x = retorch.randn(4096, 4096).to("cuda")
    x @ x
    retorch.cuda.synchronize()
    start, end = retorch.cuda.Event(enable_timing=True), retorch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    for _ in range(8):
        y = x @ x
    end.record()
    issued = time.perf_counter() - t0
    retorch.cuda.synchronize()
    waited = time.perf_counter() - t0
    assert end.query() and retorch.cuda.current_stream().query()
    ms = start.elapsed_time(end)
    assert ms > 2000 * issued, (ms, issued)  # the device took far longer than the launches
    assert waited * 1e3 >= 0.9 * ms  # synchronize() returned only once the device was done
    end.synchronize()
    close(y[:2, :3], torch.tensor(x[:2].cpu().numpy()) @ torch.tensor(x[:, :3].cpu().numpy()),
          1e-3)


def test_out_of_range_indices_stop_the_kernel_with_an_error():
    # A device-side check poisons the CUDA context, so it runs in a child process.
    import subprocess
    import sys
    code = ("import retorch\n"
            "t = retorch.zeros(4, 3, device='cuda')\n"
            "i = retorch.tensor([1, 9]).to('cuda')\n"
            "try:\n"
            "    retorch.index_select(t, 0, i).cpu()\n"
            "except RuntimeError as e:\n"
            "    print('raised:', e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "index_select: an index is out of range" in p.stdout
    assert "raised:" in p.stdout


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float64", 1e-10), ("float16", 1e-2)])
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(padding=2, dilation=2),
                                dict(groups=4, padding=1)])
def test_convolutions_and_their_gradients(dtype, tol, kw):
    x, tx = pair((3, 8, 13, 11), dtype, seed=39)
    w, tw = pair((12, 8 // kw.get("groups", 1), 3, 3), dtype, seed=40)
    b, tb = pair((12,), dtype, seed=41)
    for t in (x, w, b):
        t.requires_grad_(True)
    tx, tw, tb = (up(t).requires_grad_(True) for t in (tx, tw, tb))
    got = retorch.nn.functional.conv2d(x, w, b, **kw)
    want = torch.nn.functional.conv2d(tx, tw, tb, **kw)
    close(got, want.detach().to(t_dtype(dtype)), tol)
    (got * got).sum().backward()
    (want * want).sum().backward()
    for g, tg in ((x.grad, tx.grad), (w.grad, tw.grad), (b.grad, tb.grad)):
        scale = float(tg.abs().max())
        close(g, tg.to(t_dtype(dtype)), tol * max(scale, 1.0))
    assert ran_on_device("aten::convolution")
    assert ran_on_device("aten::_convolution_backward_weight")


def test_transposed_and_3d_convolutions():
    x, tx = pair((2, 6, 7, 9), "float32", seed=42)
    w, tw = pair((6, 4, 3, 3), "float32", seed=43)
    close(retorch.nn.functional.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
          torch.nn.functional.conv_transpose2d(tx, tw, stride=2, padding=1, output_padding=1),
          1e-4)
    v, tv = pair((2, 3, 5, 6, 7), "float32", seed=44)
    k, tk = pair((4, 3, 3, 3, 3), "float32", seed=45)
    close(retorch.nn.functional.conv3d(v, k, padding=1),
          torch.nn.functional.conv3d(tv, tk, padding=1), 1e-4)
    assert ran_on_device("aten::convolution")


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float64", 1e-10)])
def test_batch_norm_training_eval_and_gradients(dtype, tol):
    x, tx = pair((6, 5, 7, 3), dtype, seed=46)
    w, tw = pair((5,), dtype, seed=47)
    b, tb = pair((5,), dtype, seed=48)
    rm, rv = retorch.zeros(5, dtype=rt_dtype(dtype), device="cuda"), \
        retorch.ones(5, dtype=rt_dtype(dtype), device="cuda")
    trm, trv = torch.zeros(5, dtype=t_dtype(dtype)), torch.ones(5, dtype=t_dtype(dtype))
    for t in (x, w, b):
        t.requires_grad_(True)
    tx, tw, tb = (t.requires_grad_(True) for t in (tx, tw, tb))
    F, G = retorch.nn.functional, torch.nn.functional
    got = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2)
    want = G.batch_norm(tx, trm, trv, tw, tb, training=True, momentum=0.2)
    close(got, want.detach(), tol)
    close(rm, trm, tol)
    close(rv, trv, tol)
    (got * got).sum().backward()
    (want * want).sum().backward()
    for g, tg in ((x.grad, tx.grad), (w.grad, tw.grad), (b.grad, tb.grad)):
        close(g, tg, tol * 10)
    close(F.batch_norm(x.detach(), rm, rv, w.detach(), b.detach(), training=False),
          G.batch_norm(tx.detach(), trm, trv, tw.detach(), tb.detach(), training=False), tol)
    for op in ("aten::native_batch_norm", "aten::_batch_norm_backward_reduce",
               "aten::_batch_norm_backward_elemt"):
        assert ran_on_device(op)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=1, dilation=2, ceil_mode=True),
                                dict(kernel_size=(2, 3), stride=(2, 1))])
def test_max_pool_forward_indices_and_gradient(kw):
    x, tx = pair((2, 3, 11, 9), "float32", seed=49)
    x.requires_grad_(True)
    tx.requires_grad_(True)
    F, G = retorch.nn.functional, torch.nn.functional
    got, idx = F.max_pool2d(x, return_indices=True, **kw)
    want, tidx = G.max_pool2d(tx, return_indices=True, **kw)
    close(got, want.detach(), 0)
    assert (idx.cpu().numpy() == tidx.numpy()).all()
    (got * got).sum().backward()
    (want * want).sum().backward()
    close(x.grad, tx.grad, 1e-6)
    assert ran_on_device("aten::max_pool2d_with_indices")
    assert ran_on_device("aten::max_pool2d_with_indices_backward")


def test_the_demo_convnet_trains_on_the_device_like_torch():
    rng = np.random.default_rng(50)
    x = rng.standard_normal((16, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 16)

    def convnet(lib):
        nn = lib.nn
        return nn.Sequential(
            nn.Conv2d(1, 16, 5, padding=2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 5, padding=2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(7 * 7 * 32, 10))
    models = [convnet(retorch), convnet(torch)]
    with torch.no_grad():
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    models[0].to("cuda")
    data = [(cu(x), cu(y)), (torch.from_numpy(x), torch.from_numpy(y))]
    for (lib, m), (xb, yb) in zip(zip((retorch, torch), models), data):
        opt = lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            lib.nn.functional.cross_entropy(m(xb), yb).backward()
            opt.step()
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        close(p, q.detach(), 1e-3)
    fell_back = {s["op"] for s in retorch.device_fallback_stats()}
    compute = {"aten::convolution", "aten::_convolution_backward_weight", "aten::native_batch_norm",
               "aten::max_pool2d_with_indices", "aten::addmm", "aten::_cross_entropy_fused"}
    assert not (fell_back & compute), fell_back


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_pow_clamp_where_and_masked_fill(dtype, tol):
    r, t = pair((30, 17), dtype, seed=51, positive=True)
    e, te = pair((17,), dtype, seed=52)
    F32 = up
    close(retorch.pow(r, e), torch.pow(F32(t), F32(te)).to(t.dtype), tol * 4)
    for p in (2, 0.5, -1.0, 3):
        close(r ** p, (F32(t) ** p).to(t.dtype), tol * 4)
    q, tq = pair((30, 17), dtype, seed=53)
    close(q.clamp(-0.5, 0.7), F32(tq).clamp(-0.5, 0.7).to(tq.dtype), tol)
    close(q.clamp(min=0.1), F32(tq).clamp(min=0.1).to(tq.dtype), tol)
    close(q.clamp(max=-0.2), F32(tq).clamp(max=-0.2).to(tq.dtype), tol)
    c = q.clone()
    c.clamp_(-0.3, 0.3)
    close(c, F32(tq).clamp(-0.3, 0.3).to(tq.dtype), tol)
    with pytest.raises(RuntimeError):
        q.clamp()
    mask_np = np.random.default_rng(54).random((30, 1)) > 0.5
    mask, tmask = cu(mask_np), torch.from_numpy(mask_np)
    close(retorch.where(mask, q, r), torch.where(tmask, F32(tq), F32(t)).to(t.dtype), tol)
    close(q.masked_fill(mask, -7.0), F32(tq).masked_fill(tmask, -7.0).to(tq.dtype), tol)
    m = q.clone()
    m.masked_fill_(mask, 2.5)
    close(m, F32(tq).masked_fill(tmask, 2.5).to(tq.dtype), tol)
    for op in ("aten::pow.Tensor_Tensor", "aten::pow.Tensor_Scalar", "aten::clamp",
               "aten::where.self", "aten::masked_fill.Scalar"):
        assert ran_on_device(op), op


def test_cat_and_stack():
    a, ta = pair((3, 4, 5), "float32", seed=55)
    b, tb = pair((3, 2, 5), "float32", seed=56)
    close(retorch.cat([a, b], 1), torch.cat([ta, tb], 1), 0)
    close(retorch.cat([a, a.transpose(1, 2).contiguous().transpose(1, 2)], -1),
          torch.cat([ta, ta], -1), 0)
    close(retorch.stack([a, a], 0), torch.stack([ta, ta], 0), 0)
    empty = retorch.empty(0, device="cuda")
    close(retorch.cat([empty, a]), torch.cat([torch.empty(0), ta]), 0)
    out = retorch.empty((6, 4, 5), device="cuda")
    retorch.cat([a, a], 0, out=out)
    close(out, torch.cat([ta, ta], 0), 0)
    with pytest.raises(RuntimeError):
        retorch.cat([a, b], 0)
    assert ran_on_device("aten::cat")


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_random_numbers_on_the_device_are_the_cpus(dtype):
    # The same Philox counters and formulas (Note [CUDA random numbers]): a seed gives the cpu's
    # tensor, up to CUDA's double log/cos against libm's before the rounding to the dtype.
    dt = rt_dtype(dtype)
    for fill in (lambda t: t.normal_(0.5, 2.0), lambda t: t.uniform_(-1.0, 3.0)):
        retorch.manual_seed(123)
        cpu = fill(retorch.empty((257, 33), dtype=dt)).to(retorch.float64).numpy()
        retorch.manual_seed(123)
        dev = fill(retorch.empty((257, 33), dtype=dt, device="cuda")).cpu()
        np.testing.assert_allclose(dev.to(retorch.float64).numpy(), cpu, rtol=1e-6, atol=1e-6)
    retorch.manual_seed(7)
    a = retorch.randn(1000, device="cuda").cpu().numpy()
    assert abs(a.mean()) < 0.15 and abs(a.std() - 1) < 0.1
    assert ran_on_device("aten::normal_") and ran_on_device("aten::uniform_")
