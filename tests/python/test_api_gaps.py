"""python/retorch/_api_gaps.py against torch 1.13: values, dtypes, shapes, errors, gradients."""
import math
import warnings

import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(5)
X = RNG.randn(3, 4).astype(np.float32)
X3 = RNG.randn(2, 3, 4).astype(np.float32)
SYM = (lambda a: (a + a.T).astype(np.float32))(RNG.randn(4, 4))
SEG = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
SEG2 = RNG.randn(6, 2).astype(np.float32)
TIES = np.array([1.0, 1.0, 2.0, 3.0, 3.0, 0.0], np.float32)
LENS = np.array([2, 0, 3, 1], np.int64)
OFFS = np.array([0, 2, 2, 5, 6], np.int64)
# Cell inputs: batch 3, input 4, hidden 5.
CIN, CH, CC = (RNG.randn(3, n).astype(np.float32) for n in (4, 5, 5))
W = {g: (RNG.randn(g * 5, 4).astype(np.float32) * 0.5, RNG.randn(g * 5, 5).astype(np.float32)
         * 0.5, RNG.randn(g * 5).astype(np.float32), RNG.randn(g * 5).astype(np.float32))
     for g in (1, 3, 4)}


def T(m, a, **kw):
    return m.tensor(np.array(a), **kw)


def plain(v):
    if isinstance(v, (torch.Tensor, retorch.Tensor)):
        return ("T", str(v.dtype).rsplit(".", 1)[-1], v.detach().numpy())
    if isinstance(v, (tuple, list)):
        return [plain(x) for x in v]
    return v


def assert_same(got, want, where, tol=1e-5):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]", tol)
    elif isinstance(want, tuple) and want[:1] == ("T",):
        assert got[0] == "T", where
        assert got[1] == want[1], f"{where}: dtype {got[1]} != {want[1]}"
        assert got[2].shape == want[2].shape, f"{where}: shape {got[2].shape} != {want[2].shape}"
        np.testing.assert_allclose(got[2], want[2], rtol=tol, atol=tol, err_msg=where)
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), where
    else:
        assert got == want and type(got) is type(want), where


def run(fn, m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's qr/symeig deprecation warnings
        return fn(m)


def _cell(name, gates, bias=True, hx=None):
    def fn(m):
        w = [T(m, a) for a in W[gates]]
        h = hx(m) if hx else T(m, CH)
        return getattr(m, name)(T(m, CIN), h, *(w if bias else w[:2]))
    return fn


CASES = {
    "adjoint": lambda m: m.adjoint(T(m, X3)),
    "adjoint_method": lambda m: T(m, X).adjoint(),
    "adjoint_0d": lambda m: T(m, 1.5).adjoint(),
    "get_device": lambda m: m.get_device(T(m, X)),
    "is_distributed": lambda m: m.is_distributed(T(m, X)),
    "is_distributed_method": lambda m: T(m, X).is_distributed(),
    "is_inference": lambda m: m.is_inference(T(m, X)),
    "is_inference_method": lambda m: T(m, X).is_inference(),
    "init_num_threads": lambda m: m.init_num_threads(),
    "qr": lambda m: list(m.qr(T(m, X.T))),
    "qr_complete": lambda m: list(m.qr(T(m, X.T), some=False)),
    "qr_method": lambda m: list(T(m, X.T).qr(False)),
    "qr_fields": lambda m: (lambda r: [r.Q, r.R])(m.qr(T(m, X3))),
    "resize_as_": lambda m: (lambda a: [m.resize_as_(a, T(m, X3)) is a, a.shape == (2, 3, 4)])(
        T(m, X)),
    "resize_as_method_": lambda m: (lambda a: [a.resize_as_(T(m, SEG)) is a, a[:2]])(T(m, X)),
    "resize_as": lambda m: T(m, X).resize_as(T(m, X.reshape(2, 6))),
    "resize": lambda m: T(m, X).resize(4, 3),
    "addmv_": lambda m: (lambda y: [m.addmv_(y, T(m, X), T(m, X[0]), beta=2, alpha=3) is y, y])(
        T(m, SEG[:3])),
    "as_strided_": lambda m: (lambda t: [m.as_strided_(t, (2, 2), (1, 2), 1) is t, t])(
        T(m, SEG)),
    "mvlgamma_": lambda m: (lambda t: [t.mvlgamma_(2) is t, t])(T(m, [2.5, 3.0, 7.0])),
    "mvlgamma_p3": lambda m: (lambda t: [t.mvlgamma_(p=3), t])(T(m, [2.5, 3.0, 7.0])),
    "is_xpu_mps_ipu": lambda m: [T(m, X).is_xpu, T(m, X).is_mps, T(m, X).is_ipu],
    "to_dense": lambda m: (lambda t: [t.to_dense() is t, t.to_dense()])(T(m, X)),
    "to_dense_dtype": lambda m: T(m, X).to_dense(dtype=m.float64),
    "names": lambda m: [T(m, X3).names, T(m, X3).has_names(), T(m, 1.0).names],
    "refine_names_none": lambda m: [T(m, X).refine_names(None, None).names,
                                    T(m, X).refine_names(None, None)],
    "rename_none": lambda m: [T(m, X).rename(None).names, T(m, X).rename(None),
                              T(m, X).rename_(None).has_names()],
    "norm_except_dim": lambda m: m.norm_except_dim(T(m, X3)),
    "norm_except_dim_1": lambda m: m.norm_except_dim(T(m, X3), 2, 1),
    "norm_except_dim_last": lambda m: m.norm_except_dim(T(m, X3), 3, 2),
    "norm_except_dim_all": lambda m: m.norm_except_dim(T(m, X3), 2, -1),
    "norm_except_dim_neg": lambda m: m.norm_except_dim(T(m, X3), 1, -2),
    "norm_except_dim_kw": lambda m: m.norm_except_dim(T(m, X), pow=2, dim=1),
    "norm_except_dim_2d_neg": lambda m: m.norm_except_dim(T(m, X), 2, -2),
    "norm_except_dim_1d": lambda m: m.norm_except_dim(T(m, SEG), 2, 0),
    "lstm_cell": lambda m: list(m.lstm_cell(T(m, CIN), (T(m, CH), T(m, CC)),
                                            *[T(m, a) for a in W[4]])),
    "lstm_cell_nobias": lambda m: list(m.lstm_cell(T(m, CIN), [T(m, CH), T(m, CC)],
                                                   *[T(m, a) for a in W[4][:2]])),
    "gru_cell": _cell("gru_cell", 3),
    "gru_cell_nobias": _cell("gru_cell", 3, bias=False),
    "rnn_tanh_cell": _cell("rnn_tanh_cell", 1),
    "rnn_relu_cell": _cell("rnn_relu_cell", 1),
    "rnn_tanh_cell_kw": lambda m: m.rnn_tanh_cell(T(m, CIN), T(m, CH), T(m, W[1][0]),
                                                  T(m, W[1][1]), b_ih=T(m, W[1][2])),
    "symeig": lambda m: [m.symeig(T(m, SYM)).eigenvalues, m.symeig(T(m, SYM)).eigenvectors],
    "symeig_vectors_abs": lambda m: (lambda r: [r[0], r[1].abs()])(
        m.symeig(T(m, SYM), eigenvectors=True)),
    "symeig_lower": lambda m: (lambda r: [r[0], r[1].abs()])(
        T(m, np.triu(SYM, 1) * 5 + SYM).symeig(True, upper=False)),
    "symeig_upper": lambda m: m.symeig(T(m, np.triu(SYM, 1) * 5 + SYM), upper=True)[0],
}
for _r in ("sum", "mean", "max", "min", "prod"):
    CASES[f"segment_{_r}"] = (lambda r: lambda m: m.segment_reduce(
        T(m, SEG), r, lengths=T(m, LENS)))(_r)
    CASES[f"segment_{_r}_initial"] = (lambda r: lambda m: m.segment_reduce(
        T(m, SEG), r, lengths=T(m, LENS), initial=10.0))(_r)
    CASES[f"segment_{_r}_offsets"] = (lambda r: lambda m: m.segment_reduce(
        T(m, SEG), r, offsets=T(m, OFFS)))(_r)
    CASES[f"segment_{_r}_2d"] = (lambda r: lambda m: m.segment_reduce(
        T(m, SEG2), r, lengths=T(m, LENS), axis=0))(_r)
CASES["segment_unsafe"] = lambda m: m.segment_reduce(T(m, SEG), "sum", lengths=T(m, LENS),
                                                     unsafe=True)
CASES["segment_double"] = lambda m: m.segment_reduce(T(m, SEG).double(), "mean",
                                                     lengths=T(m, LENS))


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    assert_same(plain(run(CASES[case], retorch)), plain(run(CASES[case], torch)), case)


ERRORS = {
    "adjoint_1d": lambda m: T(m, SEG).adjoint(),
    "get_device_int": lambda m: m.get_device(3),
    "is_distributed_int": lambda m: m.is_distributed(3),
    "is_inference_int": lambda m: m.is_inference(3),
    "qr_1d": lambda m: m.qr(T(m, SEG)),
    "resize_as__grad": lambda m: m.resize_as_(T(m, X, requires_grad=True), T(m, X3)),
    "resize_as_numel": lambda m: T(m, X).resize_as(T(m, X3)),
    "resize_as_memory_format": lambda m: T(m, X).resize_as(T(m, X), memory_format=None),
    "addmv__dtype": lambda m: m.addmv_(T(m, [1, 2, 3]), T(m, X), T(m, X[0])),
    "addmv__shape": lambda m: m.addmv_(T(m, [1.0]), T(m, X), T(m, X[0])),
    "mvlgamma__int": lambda m: T(m, [2, 3]).mvlgamma_(2),
    "as_subclass_int": lambda m: T(m, X).as_subclass(int),
    "xpu": lambda m: T(m, X).xpu(),
    "ipu": lambda m: T(m, X).ipu(),
    "native_dropout_p": lambda m: m.native_dropout(T(m, X), 1.5, True),
    "native_dropout_int": lambda m: m.native_dropout(T(m, [1, 2]), 0.5, True),
    "native_norm": lambda m: m.native_norm(T(m, X)),
    "native_norm_dim": lambda m: m.native_norm(T(m, X), 2, [1], False, None),
    "norm_except_dim_range": lambda m: m.norm_except_dim(T(m, X3), 2, 3),
    "norm_except_dim_neg": lambda m: m.norm_except_dim(T(m, X), 2, -3),
    "lstm_cell_one_state": lambda m: m.lstm_cell(T(m, CIN), (T(m, CH),),
                                                 *[T(m, a) for a in W[4]]),
    "lstm_cell_1d": lambda m: m.lstm_cell(T(m, CIN[0]), (T(m, CH[0]), T(m, CC[0])),
                                          *[T(m, a) for a in W[4]]),
    "rnn_cell_input_size": lambda m: m.rnn_tanh_cell(T(m, CIN[:, :3]), T(m, CH),
                                                     *[T(m, a) for a in W[1]]),
    "rnn_cell_batch": lambda m: m.rnn_relu_cell(T(m, CIN), T(m, CH[:2]),
                                                *[T(m, a) for a in W[1]]),
    "gru_cell_hidden_size": lambda m: m.gru_cell(T(m, CIN), T(m, CH[:, :4]),
                                                 *[T(m, a) for a in W[3]]),
    "segment_no_lengths": lambda m: m.segment_reduce(T(m, SEG), "sum"),
    "segment_bad_reduce": lambda m: m.segment_reduce(T(m, SEG), "foo", lengths=T(m, LENS)),
    "segment_bad_total": lambda m: m.segment_reduce(T(m, SEG), "sum", lengths=T(m, [2, 2])),
    "segment_int_data": lambda m: m.segment_reduce(T(m, [1, 2]), "sum", lengths=T(m, [2])),
    "segment_float_lengths": lambda m: m.segment_reduce(T(m, SEG), "sum",
                                                        lengths=T(m, LENS).float()),
    "pca_lowrank_q": lambda m: m.pca_lowrank(T(m, X), q=5),
    "solve": lambda m: m.solve(T(m, X[:, :2]), T(m, X[:, :3])),
    "solve_method": lambda m: T(m, X[:, :2]).solve(T(m, X[:, :3])),
    "lstsq": lambda m: m.lstsq(T(m, X[:, :2]), T(m, X[:, :3])),
    "lstsq_method": lambda m: T(m, X[:, :2]).lstsq(T(m, X[:, :3])),
    "eig": lambda m: m.eig(T(m, SYM)),
    "eig_method": lambda m: T(m, SYM).eig(True),
    "matrix_rank": lambda m: m.matrix_rank(T(m, SYM)),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    with pytest.raises(Exception) as want:
        run(ERRORS[case], torch)
    with pytest.raises(Exception) as got:
        run(ERRORS[case], retorch)
    assert got.type is want.type, (case, got.value, want.value)


def test_removed_functions_say_what_torch_says():
    for name in ("solve", "lstsq", "eig", "matrix_rank"):
        with pytest.raises(RuntimeError) as want:
            getattr(torch, name)(torch.eye(2), torch.eye(2))
        with pytest.raises(RuntimeError) as got:
            getattr(retorch, name)(retorch.eye(2), retorch.eye(2))
        assert str(got.value) == str(want.value), name


GRADS = {  # fn(m, *leaves) -> differentiable output; the leaves are the given arrays
    "adjoint": (lambda m, a: m.adjoint(a) * T(m, X3.transpose(0, 2, 1)), [X3]),
    "qr": (lambda m, a: m.qr(a)[1], [X.T]),
    "qr_complete": (lambda m, a: m.qr(a, some=False)[0].abs(), [SYM]),
    "resize_as": (lambda m, a: a.resize_as(T(m, X3.reshape(6, 4))) * T(m, X3.reshape(6, 4)),
                  [X3]),
    "mvlgamma_": (lambda m, a: (a * 1 + 3).mvlgamma_(2) * 2, [X]),
    "norm_except_dim": (lambda m, a: m.norm_except_dim(a, 2, 1) * T(m, [[[1.0], [2], [3]]]),
                        [X3]),
    "norm_except_dim_all": (lambda m, a: m.norm_except_dim(a, 3, -1), [X3]),
    "lstm_cell": (lambda m, x, h, c, *w: (lambda r: r[0] * 2 + r[1])(m.lstm_cell(x, (h, c), *w)),
                  [CIN, CH, CC, *W[4]]),
    "gru_cell": (lambda m, x, h, *w: m.gru_cell(x, h, *w), [CIN, CH, *W[3]]),
    "rnn_tanh_cell": (lambda m, x, h, *w: m.rnn_tanh_cell(x, h, *w), [CIN, CH, *W[1]]),
    "rnn_relu_cell": (lambda m, x, h, *w: m.rnn_relu_cell(x, h, *w), [CIN, CH, *W[1]]),
    "segment_max_ties": (lambda m, a: m.segment_reduce(a, "max", lengths=T(m, [2, 1, 3])),
                         [TIES]),
    "segment_min_ties": (lambda m, a: m.segment_reduce(a, "min", lengths=T(m, [2, 4])), [TIES]),
    "segment_mean": (lambda m, a: m.segment_reduce(a, "mean", lengths=T(m, LENS)), [SEG]),
    "segment_sum_2d": (lambda m, a: m.segment_reduce(a, "sum", lengths=T(m, LENS), initial=1.0),
                       [SEG2]),
    "segment_prod": (lambda m, a: m.segment_reduce(a, "prod", lengths=T(m, LENS)), [SEG]),
    "symeig_vectors": (lambda m, a: m.symeig(a, True)[0], [SYM]),
    "as_subclass": (lambda m, a: a.as_subclass(m.Tensor) * 3, [X]),
}


@pytest.mark.parametrize("case", sorted(GRADS))
def test_gradients_match_torch(case):
    fn, arrays = GRADS[case]
    grads = []
    for m in (retorch, torch):
        leaves = [T(m, a, requires_grad=True) for a in arrays]
        out = run(lambda mod: fn(mod, *leaves), m)
        out.backward(T(m, np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape))
                       .astype(np.float32)))
        grads.append(plain([x.grad for x in leaves]))
    assert_same(grads[0], grads[1], case, tol=1e-4)


def test_symeig_values_only_is_not_differentiable_like_torch():
    for m in (torch, retorch):
        a = T(m, SYM, requires_grad=True)
        vals = run(lambda mod: mod.symeig(a), m)[0]
        assert vals.requires_grad
        with pytest.raises(RuntimeError, match="not differentiable"):
            vals.sum().backward()


def test_constants_and_build_flags():
    for name in ("pi", "e", "inf", "nan"):
        assert_same(getattr(retorch, name), getattr(torch, name), name)
    # Flags this build shares with torch's CPU wheel; the others follow what retorch has.
    for name in ("has_openmp", "has_lapack", "has_mkl", "has_cudnn", "has_mps"):
        assert getattr(retorch, name) is getattr(torch, name), name
    assert retorch.has_mkldnn is False and retorch.has_spectral is False
    assert retorch.has_cuda is retorch.backends.cuda.is_built()
    assert retorch.has_cuda or not retorch.cuda.is_available()


def test_output_nr_matches_torch():
    def nrs(m):
        x = T(m, X, requires_grad=True)
        q, r = m.linalg.qr(x.T)
        values, indices = x.max(1)
        with m.no_grad():
            detached = x * 2
        return [x.output_nr, (x * 2).output_nr, q.output_nr, r.output_nr, values.output_nr,
                indices.output_nr, x.split(1)[2].output_nr, x.chunk(3)[1].output_nr,
                x.detach().output_nr, detached.output_nr, T(m, X).output_nr]
    assert nrs(retorch) == nrs(torch)


def test_as_subclass_aliases_and_keeps_the_graph():
    for m in (torch, retorch):
        class Sub(m.Tensor):
            pass
        x = T(m, X, requires_grad=True)
        y = x.as_subclass(Sub)
        assert type(y) is Sub and y.requires_grad and not y.is_leaf and y.grad_fn is not None
        z = T(m, X).as_subclass(Sub)
        z.add_(1)
        assert z.is_leaf and not z.requires_grad
        base = T(m, X)
        base.as_subclass(Sub).mul_(0)
        assert float(base.abs().sum()) == 0.0  # shares storage


@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 1.0])
def test_native_dropout_training(p):
    x = T(retorch, RNG.randn(40, 50).astype(np.float32) + 3)
    out, mask = retorch.native_dropout(x, p, True)
    tout, tmask = torch.native_dropout(T(torch, x.numpy()), p, True)
    for o, k, ref_o, ref_k in ((out, mask, tout, tmask),):
        assert tuple(o.shape) == tuple(ref_o.shape) and tuple(k.shape) == tuple(ref_k.shape)
        assert str(o.dtype)[-7:] == str(ref_o.dtype)[-7:] and str(k.dtype)[-4:] == "bool"
    scale = 0.0 if p == 1 else 1.0 / (1 - p)
    np.testing.assert_allclose(out.numpy(), x.numpy() * mask.numpy() * scale, rtol=1e-6)
    kept = mask.numpy().mean()
    assert abs(kept - (1 - p)) < 0.06 and abs(tmask.numpy().mean() - (1 - p)) < 0.06
    # train=None means training, as in torch.
    assert not bool(retorch.native_dropout(x, 0.5, None)[1].all())


def test_native_dropout_eval_and_gradient():
    for m in (torch, retorch):
        x = T(m, X, requires_grad=True)
        out, mask = m.native_dropout(x, 0.5, False)
        assert mask.dtype == m.bool and bool(mask.all()) and not mask.requires_grad
        np.testing.assert_array_equal(out.detach().numpy(), X)
        out, mask = m.native_dropout(x, 0.25, True)
        out.backward(m.ones_like(out))
        np.testing.assert_allclose(x.grad.numpy(), mask.numpy() / 0.75, rtol=1e-6)


def _low_rank(m_, n_, rank, seed):
    r = np.random.RandomState(seed)
    return (r.randn(m_, rank) @ r.randn(rank, n_)).astype(np.float64)


@pytest.mark.parametrize("shape", [(30, 12), (12, 30), (2, 20, 15)])
def test_svd_lowrank_recovers_a_low_rank_matrix(shape):
    batch, (rows, cols) = shape[:-2], shape[-2:]
    a = np.stack([_low_rank(rows, cols, 3, s) for s in range(max(1, math.prod(batch)))])
    a = a.reshape(shape)
    retorch.manual_seed(0)
    u, s, v = retorch.svd_lowrank(T(retorch, a), q=5, niter=2)
    tu, ts, tv = torch.svd_lowrank(T(torch, a), q=5, niter=2)
    for got, want in ((u, tu), (s, ts), (v, tv)):
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[-7:] == "float64"
    rebuilt = u.numpy() @ (s.numpy()[..., :, None] * np.swapaxes(v.numpy(), -1, -2))
    np.testing.assert_allclose(rebuilt, a, atol=1e-8)
    np.testing.assert_allclose(s.numpy()[..., :3], torch.linalg.svdvals(T(torch, a))
                               .numpy()[..., :3], rtol=1e-9)
    eye = np.eye(5)
    np.testing.assert_allclose(np.swapaxes(u.numpy(), -1, -2) @ u.numpy(), np.broadcast_to(
        eye, batch + (5, 5)), atol=1e-10)


def test_svd_lowrank_with_mean_and_full_rank_gradient():
    a = _low_rank(20, 8, 2, 7)
    mean = np.ones((1, 8)) * 3
    u, s, v = retorch.svd_lowrank(T(retorch, a + mean), q=4, M=T(retorch, mean))
    np.testing.assert_allclose(s.numpy()[:2], torch.linalg.svdvals(T(torch, a)).numpy()[:2],
                               rtol=1e-9)
    # With q = min(m, n) the sketch spans the whole column space: S is exact, grads too.
    full = RNG.randn(9, 5)
    grads = []
    for m, fn in ((retorch, lambda t: retorch.svd_lowrank(t, q=5)[1]),
                  (torch, lambda t: torch.linalg.svdvals(t))):
        x = T(m, full, requires_grad=True)
        fn(x).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-8)


def test_pca_lowrank_matches_centered_svd():
    a = _low_rank(25, 10, 3, 3) + 5.0
    centered = a - a.mean(0, keepdims=True)
    want = torch.linalg.svdvals(T(torch, centered)).numpy()
    u, s, v = retorch.pca_lowrank(T(retorch, a), q=4)
    tu, ts, tv = torch.pca_lowrank(T(torch, a), q=4)
    assert [tuple(t.shape) for t in (u, s, v)] == [tuple(t.shape) for t in (tu, ts, tv)]
    np.testing.assert_allclose(s.numpy()[:3], want[:3], rtol=1e-9)
    rebuilt = u.numpy() @ np.diag(s.numpy()) @ v.numpy().T
    np.testing.assert_allclose(rebuilt, centered, atol=1e-8)
    u, s, v = retorch.pca_lowrank(T(retorch, a), center=False)
    assert tuple(s.shape) == tuple(torch.pca_lowrank(T(torch, a), center=False)[1].shape)
    np.testing.assert_allclose(s.numpy()[:3], torch.linalg.svdvals(T(torch, a)).numpy()[:3],
                               rtol=1e-9)
