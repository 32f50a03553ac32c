"""The Tensor API a torch program touches (attributes, conversions, factories, printing,
iteration, numpy interop, errors), each case run on torch and retorch and compared."""
import copy
import math
import pickle
import warnings

import numpy as np
import pytest
import torch

import retorch

LIBS = [torch, retorch]


def norm(v):
    """A comparable, library-neutral form of a result."""
    if isinstance(v, (torch.Tensor, retorch.Tensor)):
        return ("T", str(v.dtype).replace("retorch.", "torch."), tuple(v.shape),
                v.detach().numpy().tolist())
    if isinstance(v, (torch.dtype, retorch.dtype)):
        return str(v).replace("retorch.", "torch.")
    if isinstance(v, (torch.device, retorch.device)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return type(v).__name__ if isinstance(v, torch.Size) else [norm(x) for x in v]
    return v


CASES = {
    "shape": lambda L: tuple(L.ones(2, 3).shape),
    "size": lambda L: (tuple(L.ones(2, 3).size()), L.ones(2, 3).size(1), L.ones(2, 3).size(-1)),
    "dim_numel": lambda L: (L.ones(2, 3).dim(), L.ones(2, 3).numel(), L.ones(2, 3).ndim),
    "dtype_default": lambda L: L.ones(2).dtype,
    "dtype_kw": lambda L: L.zeros(2, dtype=L.float64).dtype,
    "int_tensor": lambda L: L.tensor([1, 2]).dtype,
    "bool_tensor": lambda L: L.tensor([True]).dtype,
    "float_list": lambda L: L.tensor([[1.5, 2], [3, 4]]),
    "device": lambda L: L.ones(1).device,
    "device_obj": lambda L: (str(L.device("cpu")), L.device("cpu") == L.device("cpu")),
    "requires_grad_kw": lambda L: L.ones(2, requires_grad=True).requires_grad,
    "is_leaf": lambda L: (L.ones(2, requires_grad=True) * 2).is_leaf,
    "grad_fn_name": lambda L: type((L.ones(2, requires_grad=True) * 2).grad_fn).__name__
    if L is torch else (L.ones(2, requires_grad=True) * 2).grad_fn.name(),
    "item": lambda L: L.tensor([2.5]).item(),
    "tolist": lambda L: L.arange(6).reshape(2, 3).tolist(),
    "numpy": lambda L: L.arange(4).numpy().tolist(),
    "array": lambda L: np.asarray(L.ones(2, 2)).tolist(),
    "iter": lambda L: [t.tolist() for t in L.arange(6).reshape(3, 2)],
    "len": lambda L: len(L.ones(4, 2)),
    "conversions": lambda L: [getattr(L.ones(1), m)().dtype for m in
                              ("double", "float", "half", "int", "long", "bool", "byte")],
    "to_dtype": lambda L: L.ones(2).to(L.int32),
    "type_name": lambda L: (L.ones(1).type(), L.ones(1, dtype=L.int64).type()),
    "type_convert": lambda L: L.ones(1).type(L.float64).dtype,
    "new_factories": lambda L: [L.ones(2, dtype=L.float64).new_zeros(3),
                                L.ones(2).new_ones((2, 2)), L.ones(1).new_full((2,), 7.0),
                                L.ones(1, dtype=L.int64).new_tensor([1, 2])],
    "T": lambda L: L.arange(6).reshape(2, 3).T,
    "mT": lambda L: L.arange(12).reshape(2, 2, 3).mT,
    "contains": lambda L: (2 in L.arange(4), 7 in L.arange(4)),
    "bool_scalar": lambda L: bool(L.tensor([3])),
    "int_float": lambda L: (int(L.tensor(3.7)), float(L.tensor(2))),
    "repr": lambda L: repr(L.tensor([[1.0, 2.5], [3.0, 4.0]])),
    "repr_int": lambda L: repr(L.tensor([1, 2, 3])),
    "repr_grad": lambda L: repr(L.tensor([1.0], requires_grad=True)),
    "repr_dtype": lambda L: repr(L.tensor([1.0], dtype=L.float64)),
    "ops_operators": lambda L: [(L.tensor([1.0, 2]) + 1), (2 * L.tensor([1.0, 2])),
                                (L.tensor([4.0]) / 2), (L.tensor([5]) // 2),
                                (L.tensor([5]) % 3), (-L.tensor([1.0])),
                                (L.tensor([2.0]) ** 2), (2 ** L.tensor([3.0])),
                                (L.ones(2, 2) @ L.ones(2)), (+L.tensor([1.0]))],
    "inplace_ops": lambda L: [L.ones(2).add_(1), L.ones(2).mul_(3), L.zeros(2).fill_(4)],
    "comparisons": lambda L: [(L.arange(3) > 1), (L.arange(3) == 1), (L.arange(3) <= 1)],
    "aliases": lambda L: [L.tensor([-1.0]).absolute(), L.tensor([3.0]).clip(0, 1),
                          L.arange(6).reshape(2, 3).swapaxes(0, 1),
                          L.arange(6).reshape(1, 2, 3).movedim(0, 2)],
    "version": lambda L: (lambda t, v: (t.add_(1)._version - v, t[0]._version - v))(
        *(lambda t: (t, t._version))(L.ones(2))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tensor_api_matches_torch(name):
    ref = norm(CASES[name](torch))
    got = norm(CASES[name](retorch))
    assert got == ref


ERRORS = {
    "index_out_of_range": lambda L: L.ones(3)[5],
    "too_many_indices": lambda L: L.ones(3)[0, 0],
    "bad_index_type": lambda L: L.ones(3)["a"],
    "shape_mismatch": lambda L: L.ones(2, 3) + L.ones(4),
    "matmul_mismatch": lambda L: L.ones(2, 3) @ L.ones(2, 3),
    "view_bad": lambda L: L.ones(6).view(4, 2),
    "item_many": lambda L: L.ones(2).item(),
    "bool_many": lambda L: bool(L.ones(2)),
    "leaf_inplace": lambda L: L.ones(2, requires_grad=True).add_(1),
    "backward_nonscalar": lambda L: (L.ones(2, requires_grad=True) * 2).backward(),
    "backward_no_grad": lambda L: L.ones(2).sum().backward(),
    "numpy_requires_grad": lambda L: L.ones(2, requires_grad=True).numpy(),
    "cat_dims": lambda L: L.cat([L.ones(2, 2), L.ones(2, 3)], 0),
    "bad_dim": lambda L: L.ones(2).sum(3),
    "tensor_from_object": lambda L: L.tensor([object()]),
    "len_scalar": lambda L: len(L.tensor(1.0)),
    "iter_scalar": lambda L: iter(L.tensor(1.0)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_raise_like_torch(name):
    kinds = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            ERRORS[name](lib)
        kinds.append(info.type)
    assert kinds[1] is kinds[0] or issubclass(kinds[1], kinds[0]), kinds


def test_from_numpy_shares_memory_and_as_array():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = retorch.from_numpy(a)
    t[0, 0] = 42
    assert a[0, 0] == 42
    a[1, 2] = -1
    assert t[1, 2].item() == -1
    assert np.asarray(t).base is not None or np.shares_memory(np.asarray(t), a)


def test_grad_modes_like_torch():
    out = []
    for lib in LIBS:
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            a = (x * 2).requires_grad
            with lib.enable_grad():
                b = (x * 2).requires_grad
        with lib.inference_mode():
            c = (x * 2).requires_grad
        with lib.set_grad_enabled(False):
            d = (x * 2).requires_grad

        @lib.no_grad()
        def f(v):
            return (v * 2).requires_grad
        out.append((a, b, c, d, f(x), lib.is_grad_enabled()))
    assert out[0] == out[1]


def test_manual_seed_reproducible():
    retorch.manual_seed(3)
    a = retorch.randn(5)
    retorch.manual_seed(3)
    b = retorch.randn(5)
    assert a.tolist() == b.tolist()


@pytest.mark.parametrize("case", ["float", "bfloat16", "int64", "bool", "scalar", "strided",
                                  "requires_grad", "parameter", "cuda"])
def test_pickle_round_trip_like_torch(case):
    import pickle
    makers = {
        "float": lambda m: m.tensor([[1.5, -2.0], [3.25, 0.0]]),
        "bfloat16": lambda m: m.tensor([1.5, -2.0, 3.0e38]).to(m.bfloat16),
        "int64": lambda m: m.tensor([1, -2, 1 << 40]),
        "bool": lambda m: m.tensor([True, False]),
        "scalar": lambda m: m.tensor(3.5),
        "strided": lambda m: m.arange(12.0).reshape(3, 4).t(),
        "requires_grad": lambda m: m.tensor([1.0, 2.0], requires_grad=True),
        "parameter": lambda m: m.nn.Parameter(m.tensor([1.0, 2.0])),
        "cuda": lambda m: m.tensor([1.0, 2.0]).to("cuda"),
    }
    if case == "cuda" and not retorch.cuda.is_available():
        # torch (CPU build) cannot make one; retorch keeps the device through its fallback.
        x = makers[case](retorch)
        y = pickle.loads(pickle.dumps(x))
        assert str(y.device) == "cuda:0" and y.tolist() == x.tolist()
        return
    want = pickle.loads(pickle.dumps(makers[case](torch)))
    got = pickle.loads(pickle.dumps(makers[case](retorch)))
    assert type(got).__name__ == type(want).__name__
    assert str(got.dtype) == str(want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.requires_grad == want.requires_grad
    assert got.float().tolist() == want.float().tolist()


def test_copy_copy_shares_values_like_torch():
    import copy
    for lib in (torch, retorch):
        x = lib.zeros(3)
        y = copy.copy(x)
        y[0] = 5.0
        assert x[0].item() == 5.0, lib.__name__


def test_pickled_module_keeps_parameters():
    import pickle
    m = retorch.nn.Sequential(retorch.nn.Linear(3, 2), retorch.nn.ReLU())
    m2 = pickle.loads(pickle.dumps(m))
    assert type(m2[0].weight).__name__ == "Parameter" and m2[0].weight.requires_grad
    assert m2[0].weight.tolist() == m[0].weight.tolist()
    x = retorch.randn(4, 3)
    assert m2(x).tolist() == m(x).tolist()


OVERFLOW_CASES = [([200], "int8"), ([300], "uint8"), ([-1], "uint8"), ([-256], "uint8"),
                  ([1e10], "int32"), ([2 ** 63], "int64"), ([1.5], "int64"), ([255.9], "uint8"),
                  ([float("nan")], "int32"), ([[1, 2], [3, 400]], "int8"), ([70000.0], "float16"),
                  ([True], "int8"), ([], "int8")]


@pytest.mark.parametrize("data,dt", OVERFLOW_CASES)
def test_tensor_from_python_numbers_checks_integer_overflow_as_torch(data, dt):
    """torch.tensor(python data, dtype=<integer type>) refuses numbers the type cannot hold
    (an unsigned type takes negatives down to -max, wrapped); numpy arrays convert unchecked."""
    outcome = []
    for lib in (torch, retorch):
        try:
            outcome.append(lib.tensor(data, dtype=getattr(lib, dt)).tolist())
        except RuntimeError as e:
            outcome.append(str(e))
    assert outcome[0] == outcome[1]
    arr = np.array([200])
    assert retorch.tensor(arr, dtype=retorch.int8).tolist() == \
        torch.tensor(arr, dtype=torch.int8).tolist()


def _outcome(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return ("raises", type(e).__name__)


ARGUMENT_CASES = {
    # Note [Fast caster failure]: each overload set still takes what it took, as torch does
    "to str": lambda L, x: x.to("cpu").dtype, "to str dtype": lambda L, x: x.to("cpu", L.float64),
    "to device": lambda L, x: x.to(L.device("cpu")), "to dtype": lambda L, x: x.to(L.int32),
    "to tensor": lambda L, x: x.to(L.zeros(1, dtype=L.float64)),
    "to device kw": lambda L, x: x.to(device="cpu", dtype=L.float16),
    "device == str": lambda L, x: L.device("cpu") == "cpu",
    "device == other str": lambda L, x: L.device("cpu") == "cuda",
    "device in factory": lambda L, x: L.zeros(2, device="cpu"),
    "mul int": lambda L, x: x.mul(2), "mul float": lambda L, x: x * 2.5,
    "mul bool": lambda L, x: x.mul(True), "rsub": lambda L, x: 1 - x,
    "add tensor": lambda L, x: L.add(x, x), "where scalar": lambda L, x: L.where(x > 1, x, 0.0),
    "view dtype": lambda L, x: x.view(L.int32), "view sizes": lambda L, x: x.view(3, 1),
    "mul str": lambda L, x: x.mul("2"), "to list": lambda L, x: x.to([1]),
    "dtype as str": lambda L, x: x.to(L.zeros(1), "float32"),
    "python float type": lambda L, x: L.zeros(2, dtype=float),
    "python int type": lambda L, x: L.full((2,), 3, dtype=int),
    "python bool type": lambda L, x: L.ones(2, dtype=bool), "sum python type": lambda L, x: x.sum(dtype=int),
}


@pytest.mark.parametrize("name", sorted(ARGUMENT_CASES))
def test_overload_arguments_as_torch(name):
    """Tensors, dtypes and devices (objects and strings) reach the overload torch picks for
    them, and arguments no overload takes raise where torch's raise."""
    f = ARGUMENT_CASES[name]
    got = _outcome(lambda: f(retorch, retorch.tensor([1.0, 2.0, 3.0])))
    want = _outcome(lambda: f(torch, torch.tensor([1.0, 2.0, 3.0])))
    assert got[0] == want[0], f"{name}: retorch {got}, torch {want}"
    if want[0] == "raises":
        return
    g, w = got[1], want[1]
    if isinstance(w, torch.Tensor):
        assert str(g.dtype).replace("retorch", "torch") == str(w.dtype)
        np.testing.assert_array_equal(g.float().numpy(), w.float().numpy())
    else:
        assert str(g).replace("retorch", "torch") == str(w), name


TO_CASES = {
    "nothing": ((), {}), "same dtype": (("float32",), {}), "dtype": (("float64",), {}),
    "dtype copy": (("float32", False, True), {}), "dtype copy kw": (("float32",), {"copy": True}),
    "dtype kw": ((), {"dtype": "int32"}), "str": (("cpu",), {}),
    "str dtype": (("cpu", "float16"), {}), "str dtype kw": (("cpu",), {"dtype": "float16"}),
    "device kw": ((), {"device": "cpu"}), "device dtype kw": ((), {"device": "cpu", "dtype": "int64"}),
    "None": ((None,), {}), "None dtype": ((None, "float64"), {}),
    "device non_blocking": (("cpu", None, True), {}), "other": (("other",), {}),
    "other copy": (("other", False, True), {}), "format": ((), {"memory_format": "channels_last"}),
    "format contiguous": ((), {"memory_format": "contiguous_format"}),
    "format None": ((), {"memory_format": None}),
    "dtype format": (("float64",), {"memory_format": "channels_last"}),
    "dtype preserve": (("float64",), {"memory_format": "preserve_format"}),
    "bad string": (("foo",), {}), "bad string kw": ((), {"device": "foo"}),
    "int copy": (("float64",), {"copy": 1}), "extra": (("float64", False, False, False), {}),
    "twice": (("cpu",), {"device": "cpu"}), "dtype twice": (("float64", False), {"non_blocking": True}),
    "unknown kw": ((), {"dtypes": "float64"}), "list": (([1],), {}),
    "format positional": (("float64", False, False, "channels_last"), {}),
    "other dtype kw": (("other",), {"dtype": "float64"}), "python type": ((float,), {}),
    "python type kw": ((), {"dtype": int}), "python bool type": (("cpu", bool), {}),
}


def _to_args(L, values, x):
    def one(v):
        if v == "other":
            return L.zeros(1, dtype=L.float64)
        if isinstance(v, str) and hasattr(L, v) and v not in ("cpu",):
            return getattr(L, v)
        return v
    return tuple(one(v) for v in values[0]), {k: one(v) for k, v in values[1].items()}


def _laid_out(L, layout):
    """A [2, 3, 2, 2] float tensor, contiguous, transposed, channels-last or sliced."""
    x = L.arange(24, dtype=L.float32).reshape(2, 3, 2, 2)
    if layout == "transposed":
        return x.transpose(1, 3)
    if layout == "channels_last":
        return x.contiguous(memory_format=L.channels_last)
    return x[:, ::2] if layout == "sliced" else x


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "channels_last", "sliced"])
@pytest.mark.parametrize("name", sorted(TO_CASES))
def test_to_arguments_as_torch(name, layout):
    """Tensor.to reads its arguments as torch's three signatures do: the same result (dtype,
    device, values, strides, and whether it is the input itself) or the same error class (a bad
    device string raises RuntimeError, a bad combination TypeError)."""
    def run(L):
        x = _laid_out(L, layout)
        args, kwargs = _to_args(L, TO_CASES[name], x)
        y = x.to(*args, **kwargs)
        return y, y is x
    got, want = _outcome(lambda: run(retorch)), _outcome(lambda: run(torch))
    assert got[0] == want[0], f"{name}: retorch {got}, torch {want}"
    if want[0] == "raises":
        assert got[1] == want[1], name
        return
    (g, g_same), (w, w_same) = got[1], want[1]
    assert g_same == w_same, name
    assert str(g.dtype).replace("retorch", "torch") == str(w.dtype), name
    assert str(g.device) == str(w.device), name
    assert g.stride() == w.stride(), (name, g.stride(), w.stride())
    np.testing.assert_array_equal(g.float().numpy(), w.float().numpy())


def test_to_differentiates_and_traces():
    """Tensor.to records the op that was called: gradients flow back through a dtype change of a
    transposed tensor, and a traced function replays the conversion."""
    x = retorch.randn(3, 4, dtype=retorch.float64, requires_grad=True)
    y = x.t().to(retorch.float32)
    assert y.stride() == (1, 4) and y.dtype == retorch.float32
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)
    traced = retorch.jit.trace(lambda t: t.to(retorch.float64) * 2, retorch.ones(2))
    out = traced(retorch.tensor([1.5, 2.0]))
    assert out.dtype == retorch.float64 and out.tolist() == [3.0, 4.0]


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                                   "bfloat16", "float32", "float64"])
def test_tolist_as_torch(dtype):
    """tolist gives torch's nested lists of Python numbers (bool, int or float, exact values)
    for every dtype, shape and layout: 0-dim gives a number, empty dims empty lists."""
    base = np.array([[0.0, -1.5, 2.25, 3.0], [70000.0, -0.0, 1e-3, 127.0], [1.0, 0.5, -7.0, 2.0]])
    cases = {"matrix": lambda L, t: t, "transposed": lambda L, t: t.t(),
             "sliced": lambda L, t: t[:, ::2], "0-dim": lambda L, t: t[1, 2],
             "empty": lambda L, t: t[:0], "empty inner": lambda L, t: t[:, :0],
             "3-d": lambda L, t: t.reshape(2, 3, 2), "vector": lambda L, t: t[0]}
    for name, f in cases.items():
        tt = f(torch, torch.tensor(base).to(getattr(torch, dtype)))
        rt = f(retorch, retorch.tensor(base).to(getattr(retorch, dtype)))
        want, got = tt.tolist(), rt.tolist()
        assert got == want, (dtype, name, got, want)
        assert repr(got) == repr(want), (dtype, name)  # the same Python types (bool, int, float)
    x = retorch.tensor([1.0, 2.0], requires_grad=True)
    assert (x * 2).tolist() == [2.0, 4.0]


def test_tensor_of_a_python_number_as_torch():
    """tensor(number): the default dtype for floats, int64 for ints, bool for bools, a 0-dim
    tensor, an int out of int64's range refused, and dtype= / requires_grad= honoured."""
    for v in [1.5, 2, True, False, -3, 2 ** 62, -2 ** 63, 2 ** 63, math.inf, 1e300]:
        got = _outcome(lambda: retorch.tensor(v))
        want = _outcome(lambda: torch.tensor(v))
        assert got[0] == want[0], v
        if want[0] == "raises":
            assert got[1] == want[1], v
            continue
        assert str(got[1].dtype).replace("retorch", "torch") == str(want[1].dtype), v
        assert got[1].shape == () and got[1].item() == want[1].item(), v
    assert retorch.tensor(1.5, dtype=retorch.int32).item() == torch.tensor(1.5, dtype=torch.int32).item()
    assert retorch.tensor(3, dtype=retorch.float64).dtype == retorch.float64
    y = retorch.tensor(2.0, requires_grad=True)
    assert y.requires_grad and y.is_leaf
    retorch.set_default_dtype(retorch.float64)
    try:
        assert retorch.tensor(0.25).dtype == retorch.float64
    finally:
        retorch.set_default_dtype(retorch.float32)


@pytest.mark.parametrize("attr", ["T", "mT", "H", "mH"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_transpose_properties_as_torch(attr, shape):
    """x.T reverses every dim, x.H too but only for matrices, x.mT and x.mH swap the last two
    dims of (batches of) matrices: the same views, strides and errors as torch's."""
    def run(L):
        x = L.arange(24.0)[:math.prod(shape)].reshape(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # T's deprecation warning for other ranks
            y = getattr(x, attr)
        return tuple(y.shape), y.stride(), y.tolist()
    got, want = _outcome(lambda: run(retorch)), _outcome(lambda: run(torch))
    assert got == want, (got, want)


FACTORY_CASES = {
    "new_zeros ints": lambda L, x: x.new_zeros(2, 3), "new_zeros tuple": lambda L, x: x.new_zeros((2, 3)),
    "new_ones list": lambda L, x: x.new_ones([4]), "new_zeros 0-dim": lambda L, x: x.new_zeros(()),
    "new_empty dtype": lambda L, x: x.new_empty(3, dtype=L.int32).fill_(5),
    "new_full": lambda L, x: x.new_full((2,), 7), "new_full dtype": lambda L, x: x.new_full([2], 1.5, dtype=L.float16),
    "new_zeros grad": lambda L, x: x.new_zeros(2, requires_grad=True),
    "new_ones device": lambda L, x: x.new_ones(2, device="cpu"),
    "zeros_like": lambda L, x: L.zeros_like(x), "ones_like dtype": lambda L, x: L.ones_like(x, dtype=L.int64),
    "full_like": lambda L, x: L.full_like(x, 2.5), "zeros_like grad": lambda L, x: L.zeros_like(x, requires_grad=True),
    "zeros_like contiguous": lambda L, x: L.zeros_like(x, memory_format=L.contiguous_format),
    "ones_like channels_last": lambda L, x: L.ones_like(x, memory_format=L.channels_last),
    "full_like None format": lambda L, x: L.full_like(x, 1, memory_format=None),
    "rand_like": lambda L, x: L.rand_like(x).ge(0), "randn_like dtype": lambda L, x: L.randn_like(x, dtype=L.float64).isfinite(),
    "new_zeros bad": lambda L, x: x.new_zeros("a"), "zeros_like bad format": lambda L, x: L.zeros_like(x, memory_format=1),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "channels_last"])
@pytest.mark.parametrize("name", sorted(FACTORY_CASES))
def test_new_and_like_factories_as_torch(name, layout):
    """x.new_zeros & co. take x's dtype and device unless given; zeros_like & co. lay their result
    out as memory_format asks (preserve_format by default) and leave requires_grad on a leaf."""
    def run(L):
        return FACTORY_CASES[name](L, _laid_out(L, layout))
    got, want = _outcome(lambda: run(retorch)), _outcome(lambda: run(torch))
    assert got[0] == want[0], f"{name}: retorch {got}, torch {want}"
    if want[0] == "raises":
        assert got[1] == want[1], name
        return
    g, w = got[1], want[1]
    assert str(g.dtype).replace("retorch", "torch") == str(w.dtype), name
    assert tuple(g.shape) == tuple(w.shape) and g.stride() == w.stride(), (name, g.stride(), w.stride())
    assert g.requires_grad == w.requires_grad and g.is_leaf == w.is_leaf, name
    np.testing.assert_array_equal(g.detach().float().numpy(), w.detach().float().numpy())


SIZE_CASES = {
    "repr": lambda L, s: repr(s), "str": lambda L, s: str(s), "numel": lambda L, s: s.numel(),
    "slice": lambda L, s: (type(s[1:]).__name__, repr(s[1:])), "index": lambda L, s: s[-1],
    "reversed slice": lambda L, s: repr(s[::-1]), "add tuple": lambda L, s: repr(s + (5,)),
    "radd tuple": lambda L, s: type((5,) + s).__name__, "mul": lambda L, s: repr(s * 2),
    "rmul": lambda L, s: repr(2 * s), "eq tuple": lambda L, s: s == (2, 3, 4),
    "hash": lambda L, s: hash(s) == hash((2, 3, 4)), "pickle": lambda L, s: repr(pickle.loads(pickle.dumps(s))),
    "copy": lambda L, s: repr(copy.copy(s)), "empty": lambda L, s: repr(L.Size()),
    "from list": lambda L, s: repr(L.Size([1, 2])), "from 0-dim tensor": lambda L, s: repr(L.Size([L.tensor(3)])),
    "float refused": lambda L, s: L.Size([2.5]), "size()": lambda L, s: repr(L.zeros(s).size()),
    "0-dim shape": lambda L, s: repr(L.zeros(()).shape), "isinstance tuple": lambda L, s: isinstance(s, tuple),
    "as a size argument": lambda L, s: repr(L.ones(2, 3).view(s[:2][::-1]).shape),
}


@pytest.mark.parametrize("name", sorted(SIZE_CASES))
def test_size_as_torch(name):
    """x.shape and x.size() are Size objects: tuples that print as torch.Size([...]), have numel(),
    and stay Sizes when sliced, added to or repeated, as torch's."""
    got = _outcome(lambda: SIZE_CASES[name](retorch, retorch.zeros(2, 3, 4).shape))
    want = _outcome(lambda: SIZE_CASES[name](torch, torch.zeros(2, 3, 4).shape))
    assert got == want, (got, want)


def _attribute_outcome(L, script):
    """What script(L) returns, or the class of the exception it raises."""
    try:
        return ("ok", script(L))
    except Exception as e:  # noqa: BLE001 (the class is the outcome)
        return ("raised", type(e).__name__)


_ATTRIBUTE_SCRIPTS = {
    "read": lambda L: (tuple(L.ones(2, 3).shape), str(L.ones(2).dtype), str(L.ones(2).device),
                       L.ones(2).ndim, L.ones(2).is_leaf, L.ones(2).requires_grad,
                       L.ones(2).grad, L.ones(2).grad_fn, L.ones(2).is_cuda),
    "requires_grad = True": lambda L: _set(L.ones(2), "requires_grad", True).requires_grad,
    "requires_grad = 1": lambda L: _set(L.ones(2), "requires_grad", 1),
    "requires_grad = None": lambda L: _set(L.ones(2), "requires_grad", None),
    "del requires_grad": lambda L: delattr(L.ones(2), "requires_grad"),
    "integer requires_grad": lambda L: _set(L.ones(2, dtype=L.long), "requires_grad", True),
    "non-leaf requires_grad = False": lambda L: _set(
        L.ones(2, requires_grad=True) * 2, "requires_grad", False),
    "grad = tensor": lambda L: _set(L.ones(2), "grad", L.full((2,), 3.0)).grad.tolist(),
    "grad = wrong size": lambda L: _set(L.ones(2), "grad", L.ones(3)),
    "grad = 3": lambda L: _set(L.ones(2), "grad", 3),
    "del grad": lambda L: _del(_set(L.ones(2), "grad", L.ones(2)), "grad").grad,
    "grad = None": lambda L: _set(_set(L.ones(2), "grad", L.ones(2)), "grad", None).grad,
    "data = tensor": lambda L: _set(L.ones(2), "data", L.arange(3)).tolist(),
    "data = 3": lambda L: _set(L.ones(2), "data", 3),
    "del data": lambda L: delattr(L.ones(2), "data"),
    "shape = ...": lambda L: _set(L.ones(2), "shape", (2,)),
    "del shape": lambda L: delattr(L.ones(2), "shape"),
    "dtype = ...": lambda L: _set(L.ones(2), "dtype", L.float64),
    "parameter": lambda L: (L.nn.Parameter(L.ones(3)).requires_grad,
                            tuple(L.nn.Parameter(L.ones(3)).shape),
                            (L.nn.Parameter(L.ones(3)) * 2).grad_fn is not None),
}


def _set(x, name, value):
    setattr(x, name, value)
    return x


def _del(x, name):
    delattr(x, name)
    return x


@pytest.mark.parametrize("case", sorted(_ATTRIBUTE_SCRIPTS))
def test_attributes_read_and_assigned_as_torch(case):
    """The attributes served by CPython getset descriptors (Note [Attributes as getset
    descriptors]): values, assignments, deletions and the errors' classes as torch's."""
    script = _ATTRIBUTE_SCRIPTS[case]
    assert _attribute_outcome(retorch, script) == _attribute_outcome(torch, script), case
