"""retorch.functional (python/retorch/functional.py) and the dtype queries against torch: each
case runs on both libraries from the same numpy data and compares values, dtypes and shapes
(and gradients where the function is differentiable)."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(0)
X = RNG.randn(4, 6).astype(np.float32)
V = RNG.randn(5).astype(np.float32)
DUP = np.array([[3, 1, 3, 1, 2, 2], [5, 5, 4, 4, 4, 1], [7, 7, 7, 7, 7, 7]], np.float32)
NANS = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 0.5, 2.5, -1.0], [np.nan] * 4], np.float32)
INTS = np.array([[0, 3, 0, 1], [2, 0, 0, 5]], np.int64)
SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 3e38, -1e-30], np.float32)


def T(m, a, **kw):
    return m.tensor(a.copy(), **kw)


# name -> f(lib) returning a tensor, a tuple of tensors or a plain value.
CASES = {
    "atleast_1d scalar": lambda m: m.atleast_1d(m.tensor(2.0)),
    "atleast_2d list": lambda m: m.atleast_2d([m.tensor(1.0), T(m, V)]),
    "atleast_3d": lambda m: m.atleast_3d(m.tensor(1.0), T(m, V), T(m, X)),
    "hstack 1d": lambda m: m.hstack([T(m, V), T(m, V[:2])]),
    "hstack 2d": lambda m: m.hstack([T(m, X), T(m, X[:, :2])]),
    "vstack": lambda m: m.vstack([T(m, X[0]), T(m, X)]),
    "row_stack": lambda m: m.row_stack([T(m, V), T(m, V)]),
    "dstack": lambda m: m.dstack([T(m, X), T(m, X)]),
    "column_stack": lambda m: m.column_stack([T(m, X[:, 0]), T(m, X)]),
    "broadcast_shapes": lambda m: tuple(m.broadcast_shapes((3, 1), (1, 4), (4,))),
    "broadcast_tensors": lambda m: m.broadcast_tensors(T(m, X[:, :1]), T(m, X[:1])),
    "meshgrid ij": lambda m: m.meshgrid(T(m, V), T(m, V[:3]), indexing="ij"),
    "meshgrid xy": lambda m: m.meshgrid(T(m, V), T(m, V[:3]), T(m, V[:2]), indexing="xy"),
    "cartesian_prod": lambda m: m.cartesian_prod(T(m, V[:3]), T(m, V[:2])),
    "combinations": lambda m: m.combinations(T(m, V), 3),
    "combinations repl": lambda m: m.combinations(T(m, V[:3]), 2, with_replacement=True),
    "block_diag": lambda m: m.block_diag(T(m, X[:2, :3]), T(m, V[:2]), m.tensor(7.0)),
    "block_diag ints": lambda m: m.block_diag(T(m, INTS), m.tensor([[1.5]])),
    "chain_matmul": lambda m: m.chain_matmul(T(m, X), T(m, X.T), T(m, X)),
    "diff": lambda m: m.diff(T(m, X), n=2, dim=1),
    "diff prepend": lambda m: m.diff(T(m, X), dim=0, prepend=T(m, X[:1]), append=T(m, X[:2])),
    "diff bool": lambda m: m.diff(m.tensor([True, False, False, True])),
    "count_nonzero": lambda m: m.count_nonzero(T(m, INTS)),
    "count_nonzero dim": lambda m: m.count_nonzero(T(m, INTS), dim=0),
    "deg2rad": lambda m: m.deg2rad(T(m, X)),
    "rad2deg": lambda m: m.rad2deg(T(m, X)),
    "deg2rad int": lambda m: m.deg2rad(m.tensor([180, 90])),
    "diag_embed": lambda m: m.diag_embed(T(m, X)),
    "diag_embed offset dims": lambda m: m.diag_embed(T(m, X), offset=-2, dim1=0, dim2=2),
    "dist": lambda m: m.dist(T(m, X), T(m, X[::-1])),
    "dist inf": lambda m: m.dist(T(m, X), T(m, X[:1]), p=float("inf")),
    "logaddexp": lambda m: m.logaddexp(T(m, X), T(m, X * 30)),
    "logaddexp special": lambda m: m.logaddexp(T(m, SPECIAL), T(m, SPECIAL[::-1])),
    "logaddexp2": lambda m: m.logaddexp2(T(m, X), T(m, X[::-1])),
    "logspace": lambda m: m.logspace(-2, 3, 11),
    "logspace base": lambda m: m.logspace(0, 4, 5, base=2, dtype=m.float64),
    "median": lambda m: m.median(T(m, X)),
    "median even": lambda m: m.median(T(m, V[:4])),
    "median dim values": lambda m: m.median(T(m, X), 1).values,
    "median dim keepdim": lambda m: m.median(T(m, X), 0, keepdim=True).values,
    "median nan": lambda m: m.median(T(m, NANS), 1).values,
    "median nan all": lambda m: m.median(T(m, NANS)),
    "nanmedian": lambda m: m.nanmedian(T(m, NANS)),
    "nanmedian dim": lambda m: m.nanmedian(T(m, NANS), 1).values,
    "mode": lambda m: m.mode(T(m, DUP), 1),
    "mode dim0": lambda m: m.mode(T(m, DUP), 0, keepdim=True),
    "mode 1d": lambda m: m.mode(m.tensor([3.0, 1.0, 3.0, 1.0, 2.0])),
    "quantile": lambda m: m.quantile(T(m, X), 0.3),
    "quantile q dim": lambda m: m.quantile(T(m, X), T(m, np.array([0.1, 0.5, 1.0], np.float32)),
                                           dim=1),
    "quantile keepdim": lambda m: m.quantile(T(m, X), T(m, np.array([0.25, 0.75], np.float32)),
                                             dim=0, keepdim=True),
    "quantile keepdim none": lambda m: m.quantile(T(m, X), 0.5, keepdim=True),
    "quantile lower": lambda m: m.quantile(T(m, X), 0.4, dim=1, interpolation="lower"),
    "quantile higher": lambda m: m.quantile(T(m, X), 0.4, dim=1, interpolation="higher"),
    "quantile midpoint": lambda m: m.quantile(T(m, X), 0.4, dim=1, interpolation="midpoint"),
    "quantile nearest": lambda m: m.quantile(T(m, X), 0.5, dim=-1, interpolation="nearest"),
    "quantile nan": lambda m: m.quantile(T(m, NANS), 0.5, dim=1),
    "nanquantile": lambda m: m.nanquantile(T(m, NANS), 0.5, dim=1),
    "rot90": lambda m: m.rot90(T(m, X)),
    "rot90 k3": lambda m: m.rot90(T(m, X), 3, [1, 0]),
    "rot90 k2": lambda m: m.rot90(T(m, X), -2),
    "std_mean": lambda m: m.std_mean(T(m, X), 1),
    "var_mean": lambda m: m.var_mean(T(m, X), dim=0, unbiased=False, keepdim=True),
    "var_mean all": lambda m: m.var_mean(T(m, X)),
    "take_along_dim": lambda m: m.take_along_dim(T(m, X), T(m, X).argsort(1), 1),
    "take_along_dim bcast": lambda m: m.take_along_dim(T(m, X), T(m, INTS[:1, :3]), 1),
    "take_along_dim flat": lambda m: m.take_along_dim(T(m, X), T(m, INTS)),
    "trapezoid": lambda m: m.trapezoid(T(m, X)),
    "trapezoid dx": lambda m: m.trapezoid(T(m, X), dx=0.5, dim=0),
    "trapezoid x": lambda m: m.trapezoid(T(m, X), T(m, np.cumsum(np.abs(X[0])))),
    "tril_indices": lambda m: m.tril_indices(4, 3),
    "triu_indices offset": lambda m: m.triu_indices(3, 5, 1),
    "tril_indices neg": lambda m: m.tril_indices(5, 4, -1),
    "unique_consecutive": lambda m: m.unique_consecutive(
        m.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True, return_counts=True),
    "unique_consecutive dim": lambda m: m.unique_consecutive(
        m.tensor([[1, 1, 2], [1, 1, 2], [3, 3, 3]]), return_counts=True, dim=0),
    "heaviside": lambda m: m.heaviside(T(m, SPECIAL), m.tensor([0.5])),
    "hypot": lambda m: m.hypot(T(m, X), T(m, X[::-1])),
    "hypot special": lambda m: m.hypot(T(m, SPECIAL), T(m, SPECIAL[::-1])),
    "frac": lambda m: m.frac(T(m, SPECIAL * 1.3)),
    "nansum": lambda m: m.nansum(T(m, NANS)),
    "nansum dim": lambda m: m.nansum(T(m, NANS), 1, keepdim=True),
    "nanmean dim": lambda m: m.nanmean(T(m, NANS), 1),
    "mv": lambda m: m.mv(T(m, X.T), T(m, V[:4])),
    "method median": lambda m: T(m, X).median(1).values,
    "method quantile": lambda m: T(m, X).quantile(0.9, dim=0),
    "method frac": lambda m: T(m, X * 3).frac(),
    "finfo": lambda m: [(f.bits, f.eps, f.max, f.min, f.tiny, f.resolution) for f in
                        (m.finfo(m.float32), m.finfo(m.float64), m.finfo(m.float16),
                         m.finfo(m.bfloat16), m.finfo())],
    "iinfo": lambda m: [(i.bits, i.min, i.max) for i in
                        (m.iinfo(m.uint8), m.iinfo(m.int8), m.iinfo(m.int16), m.iinfo(m.int32),
                         m.iinfo(m.int64))],
    "promote_types": lambda m: [str(m.promote_types(a, b)).rsplit(".", 1)[-1] for a, b in
                                [(m.int32, m.float16), (m.uint8, m.int8), (m.bool, m.bool),
                                 (m.bfloat16, m.float16), (m.int64, m.float32),
                                 (m.bool, m.uint8)]],
    "result_type": lambda m: [str(m.result_type(a, b)).rsplit(".", 1)[-1] for a, b in
                              [(m.tensor([1]), 2.5), (m.tensor([1], dtype=m.int8), 1000),
                               (m.tensor([1.0], dtype=m.float16), m.tensor(2.0)),
                               (m.tensor(1), m.tensor([1], dtype=m.int8)), (1, 2.0),
                               (m.tensor([True]), False)]],
    "can_cast": lambda m: [m.can_cast(a, b) for a, b in
                           [(m.float32, m.int32), (m.int32, m.float32), (m.bool, m.int8),
                            (m.int8, m.bool), (m.float64, m.float16), (m.int64, m.uint8)]],
}


def plain(v):
    """A library-neutral form: numpy arrays (with the dtype name) for tensors."""
    if isinstance(v, (torch.Tensor, retorch.Tensor)):
        return ("T", str(v.dtype).rsplit(".", 1)[-1], v.detach().float().numpy()
                if "bfloat16" in str(v.dtype) else v.detach().numpy())
    if isinstance(v, (tuple, list)):
        return [plain(e) for e in v]
    return v


def assert_same(got, want, where):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, tuple) and want[:1] == ("T",):
        assert got[0] == "T", where
        assert got[1] == want[1], f"{where}: dtype {got[1]} != {want[1]}"
        assert got[2].shape == want[2].shape, f"{where}: shape {got[2].shape} != {want[2].shape}"
        np.testing.assert_allclose(got[2], want[2], rtol=2e-6, atol=1e-6, err_msg=where)
    else:
        assert got == want, where


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecations (chain_matmul)
        want = plain(CASES[case](torch))
    got = plain(CASES[case](retorch))
    assert_same(got, want, case)


def test_named_results_and_indices_point_at_their_values():
    x = retorch.tensor(X)
    for r, name in ((retorch.median(x, 1), "median"), (retorch.nanmedian(x, 0), "nanmedian"),
                    (retorch.mode(retorch.tensor(DUP), 1), "mode")):
        assert type(r).__name__ == name and r._fields == ("values", "indices")
    r = retorch.median(x, 1)
    assert retorch.equal(x.gather(1, r.indices.unsqueeze(1)).squeeze(1), r.values)
    # mode's index is the last occurrence, as torch's is.
    want = torch.mode(torch.tensor(DUP), 1)
    got = retorch.mode(retorch.tensor(DUP), 1)
    assert got.indices.tolist() == want.indices.tolist()


@pytest.mark.parametrize("case", ["median", "quantile", "hstack", "logaddexp", "hypot",
                                  "trapezoid", "diag_embed", "take_along_dim", "nanmean"])
def test_gradients_match_torch(case):
    fns = {
        "median": lambda m, a: m.median(a, 1).values,
        "quantile": lambda m, a: m.quantile(a, 0.3, dim=0),
        "hstack": lambda m, a: m.hstack([a, a * 2]),
        "logaddexp": lambda m, a: m.logaddexp(a, a.flip([1]) * 2),
        "hypot": lambda m, a: m.hypot(a, a.flip([0])),
        "trapezoid": lambda m, a: m.trapezoid(a, dx=0.3),
        "diag_embed": lambda m, a: m.diag_embed(a, 1),
        "take_along_dim": lambda m, a: m.take_along_dim(a, a.argsort(1), 1),
        "nanmean": lambda m, a: m.nanmean(a, 1),
    }
    grads = []
    for m in (torch, retorch):
        a = m.tensor(X.copy(), requires_grad=True)
        out = fns[case](m, a)
        w = m.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(np.float32))
        (out * w).sum().backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_multinomial_samples_like_a_multinomial():
    probs = retorch.tensor([[0.1, 0.0, 0.6, 0.3], [0.0, 0.0, 1.0, 0.0]])
    retorch.manual_seed(0)
    draws = retorch.multinomial(probs, 4000, replacement=True)
    assert draws.shape == (2, 4000) and draws.dtype == retorch.int64
    freq = np.bincount(draws[0].numpy(), minlength=4) / 4000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.03)
    assert (draws[1] == 2).all().item()
    for _ in range(20):  # without replacement: distinct, never a zero-probability category
        s = retorch.multinomial(probs[0], 3).tolist()
        assert len(set(s)) == 3 and 1 not in s
    counts = np.zeros(4)
    for _ in range(2000):
        counts[retorch.multinomial(probs[0], 1).item()] += 1
    np.testing.assert_allclose(counts / 2000, [0.1, 0.0, 0.6, 0.3], atol=0.04)
    g = retorch.Generator().manual_seed(5)
    a = retorch.multinomial(probs[0], 10, True, generator=g)
    g.manual_seed(5)
    assert retorch.multinomial(probs[0], 10, True, generator=g).tolist() == a.tolist()
    with pytest.raises(RuntimeError, match="not enough non-negative category"):
        retorch.multinomial(probs[0], 4)
    with pytest.raises(RuntimeError, match="probability tensor contains"):
        retorch.multinomial(retorch.tensor([0.5, -0.1]), 1)


def test_normal_and_randint_like_shapes_dtypes_and_moments():
    retorch.manual_seed(1)
    z = retorch.normal(2.0, 3.0, size=(20000,))
    assert z.dtype == retorch.float32 and abs(z.mean().item() - 2) < 0.1
    assert abs(z.std().item() - 3) < 0.1
    mean = retorch.tensor([0.0, 100.0])
    z = retorch.normal(mean, retorch.tensor([1e-3, 1e-3]))
    assert z.shape == (2,) and abs(z[1].item() - 100) < 0.1
    r = retorch.randint_like(retorch.zeros(3, 4, dtype=retorch.int32), 5, 9)
    assert r.shape == (3, 4) and r.dtype == retorch.int32
    assert ((r >= 5) & (r < 9)).all().item()


def test_errors_name_the_function():
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        retorch.broadcast_shapes((2, 3), (4,))
    with pytest.raises(RuntimeError, match="quantile\\(\\) q values must be in the range"):
        retorch.quantile(retorch.tensor(X), 1.5)
    with pytest.raises(ValueError, match="interpolation must be one of"):
        retorch.quantile(retorch.tensor(X), 0.5, interpolation="cubic")
    with pytest.raises(TypeError, match="finfo\\(\\) requires a floating point"):
        retorch.finfo(retorch.int32)
    with pytest.raises(RuntimeError, match="Expect a 1D vector"):
        retorch.combinations(retorch.tensor(X))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        retorch.meshgrid(retorch.arange(2), retorch.arange(3))
    assert any("indexing argument" in str(x.message) for x in w)


def test_named_result_pickles_by_name():
    r = retorch.return_types._make("median", ["values", "indices"])(1.0, 2)
    back = pickle.loads(pickle.dumps(r))
    assert type(back).__name__ == "median" and back.values == 1.0


@pytest.mark.parametrize("name,args", [
    ("equal", lambda m: (m.tensor(X), m.tensor(X))), ("clip", lambda m: (m.tensor(X), -0.5, 0.5)),
    ("fliplr", lambda m: (m.tensor(X),)), ("flipud", lambda m: (m.tensor(X),)),
    ("movedim", lambda m: (m.tensor(X), 0, 1)), ("square", lambda m: (m.tensor(X),)),
    ("swapaxes", lambda m: (m.tensor(X), 0, 1)), ("true_divide", lambda m: (m.tensor(X), 3)),
    ("is_floating_point", lambda m: (m.tensor(INTS),)), ("is_nonzero", lambda m: (m.tensor([2]),)),
])
def test_method_forms_as_functions(name, args):
    assert_same(plain(getattr(retorch, name)(*args(retorch))),
                plain(getattr(torch, name)(*args(torch))), name)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "int64"])
def test_python_bitwise_operators_match_torch(dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(-100, 100, 12) if dtype != "uint8" else rng.integers(0, 255, 12)
    b = rng.integers(-100, 100, 12) if dtype != "uint8" else rng.integers(0, 255, 12)
    if dtype == "bool":
        a, b = a > 0, b > 0
    a, b = a.astype(dtype), b.astype(dtype)
    shifts = np.arange(12) % 7 + (1 if dtype != "bool" else 0)
    cases = {
        "and": lambda m, x, y: x & y, "or": lambda m, x, y: x | y, "xor": lambda m, x, y: x ^ y,
        "not": lambda m, x, y: ~x, "and scalar": lambda m, x, y: x & 5,
        "ror scalar": lambda m, x, y: 6 | x, "xor 0d": lambda m, x, y: x ^ m.tensor(3),
        "iand": lambda m, x, y: x.clone().__iand__(y), "bitwise_or fn": lambda m, x, y:
        m.bitwise_or(x, y),
    }
    if dtype != "bool":
        cases.update({
            "lshift": lambda m, x, y: x << m.tensor(shifts.astype(dtype)),
            "rshift": lambda m, x, y: x >> m.tensor(shifts.astype(dtype)),
            "rshift scalar": lambda m, x, y: x >> 2, "lshift scalar": lambda m, x, y: x << 3,
            "irshift": lambda m, x, y: x.clone().__irshift__(1),
        })
    for name, f in cases.items():
        want = f(torch, torch.tensor(a), torch.tensor(b))
        got = f(retorch, retorch.tensor(a), retorch.tensor(b))
        assert_same(plain(got), plain(want), f"{dtype} {name}")


def test_bitwise_refuses_floats_and_right_shift_out_of_range_fills_the_sign():
    with pytest.raises(RuntimeError, match="bitwise_and.*float32"):
        retorch.tensor([1.5]) & retorch.tensor([1.0])
    with pytest.raises(RuntimeError, match="bitwise_left_shift.*float32"):
        retorch.tensor([1.5]) << 1
    for dt in ("int8", "int16", "int32", "int64"):
        a = np.array([5, -5, 3, -3, 1, -1], dt)
        k = np.array([-1, -2, 0, 3, 7, 100], dt)
        assert (retorch.tensor(a) >> retorch.tensor(k)).tolist() == \
            (torch.tensor(a) >> torch.tensor(k)).tolist(), dt


def test_tri_indices_against_torch():
    """tril_indices/triu_indices from each row's column range: every offset from below the
    matrix to past it, empty and one-row/one-column shapes, exactly torch's indices."""
    import itertools
    for row, col, off in itertools.product((0, 1, 3, 5, 8), (0, 1, 4, 7),
                                           (-9, -3, -1, 0, 1, 2, 6, 10)):
        for name in ("tril_indices", "triu_indices"):
            got = getattr(retorch, name)(row, col, off)
            want = getattr(torch, name)(row, col, off)
            assert tuple(got.shape) == tuple(want.shape), (name, row, col, off)
            np.testing.assert_array_equal(got.numpy(), want.numpy(),
                                          err_msg=f"{name}{row, col, off}")
    assert retorch.triu_indices(4, 4, dtype=retorch.int32).dtype == retorch.int32
