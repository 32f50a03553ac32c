"""The meta device: every op of the oracle sweep that has a meta kernel gives, on meta tensors, the
shape, dtype and strides real execution gives (without data); models run on meta as dry runs."""
import numpy as np
import pytest

import retorch
import retorch.nn as nn
from oracle import load_ops, outcome
from test_ops_sweep import BY_NAME, build, lib_kwargs, params, retorch_inplace, split

META_OPS = {e["name"] for e in load_ops() if "Meta" in e.get("dispatch", {})}
SWEEP_WITH_META = [p for p in params() if p.values[0] in META_OPS]


def as_meta(x):
    """A meta tensor with x's shape, strides and dtype (anything else as it is)."""
    if isinstance(x, retorch.Tensor):
        return retorch.empty_strided(tuple(x.shape), x.stride(), dtype=x.dtype, device="meta")
    return x


def assert_same_meta(m, r, what):
    if isinstance(r, (tuple, list)):
        assert isinstance(m, (tuple, list)) and len(m) == len(r), what
        for i, (mi, ri) in enumerate(zip(m, r)):
            assert_same_meta(mi, ri, f"{what}[{i}]")
        return
    assert m.device == retorch.device("meta"), f"{what}: result on {m.device}"
    assert tuple(m.shape) == tuple(r.shape), f"{what}: shape {tuple(m.shape)} vs {tuple(r.shape)}"
    assert m.dtype == r.dtype, f"{what}: dtype {m.dtype} vs {r.dtype}"
    if r.numel() > 1:
        assert m.stride() == r.stride(), f"{what}: strides {m.stride()} vs {r.stride()}"


def test_the_sweep_covers_meta_ops():
    assert len(SWEEP_WITH_META) > 1000
    swept = {p.values[0] for p in SWEEP_WITH_META}
    assert {"add.Tensor", "exp", "sum.dim_IntList", "softmax.int", "max.dim"} <= swept


@pytest.mark.parametrize("name,dtype,specs,kwargs", SWEEP_WITH_META)
def test_meta_matches_real_execution(name, dtype, specs, kwargs):
    e = BY_NAME[name]
    rargs = split(build(e, dtype, specs, seed=1))[1]
    margs = [as_meta(a) for a in rargs]
    rkw = lib_kwargs(kwargs, retorch)
    fn = getattr(retorch, e["base"], None)
    if fn is None or "function" not in e["variants"]:
        fn = lambda x, *a, **k: getattr(x, e["base"])(*a, **k)  # noqa: E731
    r_out, r_err = outcome(fn, *rargs, **rkw)
    if r_err is not None:
        return  # value-dependent errors need data; shape errors are checked below
    m_out, m_err = outcome(fn, *margs, **rkw)
    assert m_err is None, f"meta raised {type(m_err).__name__}: {m_err}"
    assert_same_meta(m_out, r_out, "function")
    if "inplace" in e["variants"]:
        rargs = split(build(e, dtype, specs, seed=1))[1]
        margs = [as_meta(a) for a in rargs]
        r_res, r_err = outcome(retorch_inplace(e), *rargs, **rkw)
        m_res, m_err = outcome(retorch_inplace(e), *margs, **rkw)
        assert (m_err is None) == (r_err is None), f"inplace: meta {m_err!r} vs cpu {r_err!r}"
        if r_err is None:
            assert m_res.is_set_to(margs[0]), "inplace: must return self"
            assert_same_meta(m_res, r_res, "inplace")
    if "out" in e["variants"] and isinstance(r_out, retorch.Tensor):
        o = retorch.empty(0, dtype=r_out.dtype, device="meta")
        res = fn(*margs, **rkw, out=o)
        assert tuple(o.shape) == tuple(r_out.shape) and res.shape == o.shape


def test_shape_errors_are_raised_on_meta():
    a, b = retorch.empty(3, 4, device="meta"), retorch.empty(5, device="meta")
    with pytest.raises(RuntimeError, match="must match"):
        a + b
    with pytest.raises(RuntimeError):
        retorch.mm(a, retorch.empty(3, 2, device="meta"))
    with pytest.raises(IndexError, match="Dimension out of range"):
        a.sum(5)


def test_no_data_on_meta():
    x = retorch.ones(2, 3, device="meta")
    assert repr(x) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(retorch.arange(4, device="meta")) == \
        "tensor(..., device='meta', size=(4,), dtype=torch.int64)"
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        x.cpu()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        x.sum().item()
    with pytest.raises(TypeError, match="can't convert meta"):
        x.numpy()
    with pytest.raises(NotImplementedError, match="aten::nonzero.*depends on the input.s values"):
        retorch.nonzero(x)
    # Into meta from anything: shapes only.
    y = retorch.randn(2, 3).to("meta")
    assert y.device == retorch.device("meta") and y.shape == (2, 3)
    y.copy_(retorch.randn(3))
    with pytest.raises(RuntimeError, match="same device"):
        x + retorch.ones(2, 3)


def make_convnet():
    return nn.Sequential(nn.Conv2d(3, 16, 5, padding=2), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, stride=2), nn.AdaptiveAvgPool2d(2),
                         nn.Flatten(), nn.Linear(128, 10), nn.LogSoftmax(1))


def make_transformerish():
    return nn.Sequential(nn.Embedding(50, 16), nn.LayerNorm(16), nn.Linear(16, 32), nn.GELU(),
                         nn.Dropout(0.1), nn.Linear(32, 16))


@pytest.mark.parametrize("make,shape,dtype", [(make_convnet, (4, 3, 32, 32), "float32"),
                                              (make_transformerish, (2, 7), "int64")])
def test_models_run_on_meta_like_on_cpu(make, shape, dtype):
    retorch.manual_seed(0)
    model = make()
    x = retorch.randint(0, 50, shape) if dtype == "int64" else retorch.randn(*shape)
    shapes = {}
    for dev in ("cpu", "meta"):
        seen = []
        hooks = [m.register_forward_hook(lambda mod, i, o: seen.append((tuple(o.shape), o.dtype)))
                 for m in model.modules() if not list(m.children())]
        m = model.to(dev)
        out = m(x.to(dev))
        (out.sum() if dev == "cpu" else out).shape
        for h in hooks:
            h.remove()
        shapes[dev] = seen
        assert out.device == retorch.device(dev)
    assert shapes["meta"] == shapes["cpu"] and len(shapes["cpu"]) > 3
    # Training on meta: autograd builds and runs the same graph, without data.
    m = make().to("meta")
    loss = m(x.to("meta")).sum()
    loss.backward()
    assert all(p.grad is not None and p.grad.device == retorch.device("meta")
               and p.grad.shape == p.shape for p in m.parameters())


def test_meta_factories():
    assert retorch.empty_strided((2, 3), (1, 2), device="meta").stride() == (1, 2)
    assert retorch.linspace(0, 1, 7, device="meta").shape == (7,)
    assert retorch.eye(3, 5, device="meta").shape == (3, 5)
    assert retorch.randperm(6, device="meta").dtype == retorch.int64
    assert retorch.arange(0, 1, 0.25, device="meta").shape == (4,)
    assert retorch.full((2, 2), 7, device="meta").dtype == retorch.int64
    assert retorch.rand(3, device="meta").shape == (3,)
    assert np.prod(retorch.zeros(4, 5, device="meta").shape) == 20


# Ops outside the generated sweep whose meta kernels are the CPU kernels: each case on real
# tensors of several layouts and on meta tensors of the same geometry.
CUSTOM = [
    ("sort", lambda x: x.sort(dim=1, descending=True)),
    ("sort_d0", lambda x: retorch.sort(x, dim=0, stable=True)),
    ("topk", lambda x: x.topk(2, dim=0)),
    ("topk_last", lambda x: x.topk(3, largest=False)),
    ("cumprod", lambda x: x.cumprod(1)),
    ("cumprod_dtype", lambda x: retorch.cumprod(x, 0, dtype=retorch.float64)),
    ("cummax", lambda x: x.cummax(0)),
    ("cummin", lambda x: x.cummin(-1)),
    ("logcumsumexp", lambda x: x.logcumsumexp(1)),
    ("pow_scalar", lambda x: x.pow(2)),
    ("polygamma", lambda x: retorch.polygamma(1, x)),
    ("logit", lambda x: x.logit(eps=1e-6)),
    ("norm", lambda x: x.norm(dim=1)),
    ("mm", lambda x: x.t().mm(x)),
    ("cat", lambda x: retorch.cat([x, x.exp()], 0)),
    ("index_select", lambda x: x.index_select(1, retorch.tensor([0, 2]).to(x.device))),
    ("gather", lambda x: x.gather(1, retorch.zeros(3, 2, dtype=retorch.int64).to(x.device))),
    ("where", lambda x: retorch.where(x > 0, x, x * 2)),
    ("clamp", lambda x: x.clamp(min=0.1)),
    ("masked_fill", lambda x: x.masked_fill(x > 0.5, 0.0)),
]


# The same for 4-d inputs (N, C, H, W): pooling, resampling, im2col/col2im, scatter, and the
# searches and histograms whose output shape needs no data.
F = retorch.nn.functional
CUSTOM_4D = [
    ("upsample_nearest", lambda x: F.interpolate(x, size=(7, 9), mode="nearest")),
    ("upsample_bilinear", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear",
                                                  align_corners=False)),
    ("upsample_nearest_backward",
     lambda x: retorch.upsample_nearest2d_backward(x, [5, 6], [2, 3, 3, 4])),
    ("upsample_bilinear_backward",
     lambda x: retorch.upsample_bilinear2d_backward(x, [5, 6], [2, 3, 10, 12], True)),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True)),
    ("im2col", lambda x: F.unfold(x, (2, 3), padding=1)),
    ("col2im", lambda x: F.fold(x.reshape(2, 18, 5), (3, 6), (3, 2))),
    ("scatter", lambda x: x.scatter(1, retorch.zeros(2, 2, 5, 6, dtype=retorch.int64)
                                    .to(x.device), 1.5)),
    ("scatter_src", lambda x: retorch.scatter(x, 3, retorch.zeros(2, 3, 5, 2, dtype=retorch.int64)
                                              .to(x.device), x)),
    ("scatter_add_", lambda x: x.clone().scatter_add_(
        0, retorch.zeros(1, 3, 5, 6, dtype=retorch.int64).to(x.device), x)),
    ("searchsorted", lambda x: retorch.searchsorted(x.reshape(-1).sort()[0], x)),
    ("histc", lambda x: retorch.histc(x, bins=7, min=-1.0, max=1.0)),
    ("cdist", lambda x: retorch.cdist(x.reshape(6, 30), x.reshape(6, 30)[:4])),
    ("index", lambda x: x[:, retorch.tensor([2, 0]).to(x.device), 1:3]),
    ("index_2", lambda x: x[retorch.tensor([[1], [0]]).to(x.device), :,
                            retorch.tensor([0, 4, 2]).to(x.device)]),
    ("index_put", lambda x: x.index_put((retorch.tensor([1, 0]).to(x.device),),
                                        retorch.zeros(3, 5, 6).to(x.device))),
    ("index_put_acc", lambda x: x.clone().index_put_(
        (None, retorch.tensor([2]).to(x.device)), retorch.ones(2, 1, 5, 6).to(x.device),
        accumulate=True)),
]


@pytest.mark.parametrize("name,fn", CUSTOM_4D, ids=[c[0] for c in CUSTOM_4D])
@pytest.mark.parametrize("layout", ["contig", "channels_last"])
def test_4d_ops_on_meta_match_real_execution(name, fn, layout):
    x = retorch.rand(2, 3, 5, 6)
    if layout == "channels_last":
        x = x.contiguous(memory_format=retorch.channels_last)
    r = fn(x)
    m = fn(as_meta(x))
    assert_same_meta(m, r, name)


@pytest.mark.parametrize("name,fn", CUSTOM, ids=[c[0] for c in CUSTOM])
@pytest.mark.parametrize("layout", ["contig", "transposed", "expanded"])
def test_custom_ops_on_meta_match_real_execution(name, fn, layout):
    if layout == "contig":
        x = retorch.rand(3, 4)
    elif layout == "transposed":
        x = retorch.rand(4, 3).t()
    else:
        x = retorch.rand(1, 4).expand(3, 4)
    r = fn(x)
    m = fn(as_meta(x))
    assert_same_meta(m, r, name)


def _meta_vs_real(fn, *args):
    """fn on real tensors and on meta tensors of the same geometry: same shapes, dtypes, strides."""
    r = fn(*args)
    m = fn(*[as_meta(a) for a in args])
    assert_same_meta(m, r, getattr(fn, "__name__", "fn"))


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "cholesky", "qr", "qr_complete",
                                  "svd", "svdvals", "eigh", "eigvalsh", "solve",
                                  "solve_triangular"])
def test_lapack_ops_on_meta_match_real_execution(name):
    a = retorch.rand(2, 4, 4) + 4 * retorch.eye(4)
    spd = a @ a.transpose(-2, -1)
    rect = retorch.rand(2, 5, 3)
    la = retorch.linalg
    fns = {
        "inv": (la.inv, a), "det": (la.det, a), "slogdet": (la.slogdet, a),
        "cholesky": (la.cholesky, spd), "qr": (la.qr, rect),
        "qr_complete": (lambda x: la.qr(x, mode="complete"), rect),
        "svd": (lambda x: la.svd(x, full_matrices=False), rect), "svdvals": (la.svdvals, rect),
        "eigh": (la.eigh, spd), "eigvalsh": (la.eigvalsh, spd),
        "solve": (lambda x: la.solve(x, retorch.rand(2, 4, 3).to(x.device)), a),
        "solve_triangular": (lambda x: la.solve_triangular(
            x, retorch.rand(2, 4, 2).to(x.device), upper=True), a),
    }
    fn, x = fns[name]
    _meta_vs_real(fn, x)


def test_llm_kernels_on_meta_match_real_execution():
    x = retorch.rand(3, 2, 8)
    w = retorch.rand(8)
    _meta_vs_real(lambda x, w: retorch.fused_rms_norm(x, None, w, 1e-6), x, w)
    _meta_vs_real(lambda x, r, w: retorch.fused_rms_norm(x, r, w, 1e-6), x, retorch.rand(3, 2, 8), w)
    _meta_vs_real(retorch.silu_and_mul, retorch.rand(4, 10))
    pos = retorch.tensor([0, 3, 5])
    cache = retorch.rand(8, 6)
    _meta_vs_real(lambda x, p, c: retorch.rotary_embedding(x, p, c, False), x, pos, cache)
    kc, vc = retorch.rand(4, 2, 1, 8), retorch.rand(4, 2, 1, 8)
    _meta_vs_real(lambda x, p, c, k, v, s: retorch.rotary_and_cache(x, p, c, k, v, s),
                  retorch.rand(3, 32), pos, cache, kc, vc, retorch.tensor([0, 7, 2]))
    tables, qseq, qpos = retorch.tensor([[0, 1], [2, 3]]), retorch.tensor([0, 1]), retorch.tensor([3, 1])
    _meta_vs_real(lambda q, k, v, t, s, p: retorch.paged_attention(q, k, v, t, s, p, 0.35, -1),
                  retorch.rand(2, 2, 8), kc, vc, tables, qseq, qpos)


def test_value_dependent_shapes_raise_on_meta():
    # A mask's true count is data: boolean indexing, like nonzero, cannot run on meta.
    x = retorch.empty(3, 4, device="meta")
    with pytest.raises(NotImplementedError, match="aten::nonzero.*meta"):
        x[x > 0]
    with pytest.raises(NotImplementedError, match="meta"):
        retorch.nonzero(x)


def test_gguf_embedding_and_ctc_ops_on_meta_match_real_execution():
    w = retorch.rand(6, 64)
    for qtype in (8, 2):  # Q8_0, Q4_0
        _meta_vs_real(lambda x: retorch.quantize_blocks(x, qtype), w)
        packed = retorch.quantize_blocks(w, qtype)
        _meta_vs_real(lambda p: retorch.dequantize_blocks(p, qtype, 64), packed)
        _meta_vs_real(lambda x, p: retorch.quantized_linear(x, p, qtype, 64),
                      retorch.rand(3, 64), packed)
    emb = retorch.rand(10, 4)
    _meta_vs_real(lambda e, i: retorch.embedding_renorm_(e.clone(), i, 1.0, 2.0),
                  emb, retorch.tensor([1, 3]))
    F = retorch.nn.functional
    for mode in ("sum", "max"):
        _meta_vs_real(lambda e, i, o: F.embedding_bag(i, e, o, mode=mode), emb,
                      retorch.tensor([0, 2, 4, 5]), retorch.tensor([0, 2]))
    lp = retorch.rand(7, 2, 5).log_softmax(2)
    tg = retorch.tensor([[1, 2, 3], [2, 4, 0]])

    def ctc(lp, tg):
        lp = lp.detach().requires_grad_(True)
        loss = F.ctc_loss(lp, tg, [7, 6], [3, 2], reduction="none")
        return loss, retorch.autograd.grad(loss.sum(), lp)[0]
    _meta_vs_real(ctc, lp, tg)
