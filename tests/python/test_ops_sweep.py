"""Generated oracle sweep: each generic-kind op of ops.yaml vs PyTorch, all variants, and grads."""
import functools
import zlib

import numpy as np
import pytest
import torch

import retorch
from oracle import (DTYPE_SETS, FLOATS, Pair, assert_close, assert_matches, call_torch,
                    check_same_error, dtype_name, load_ops, make_values, outcome,
                    pair_from_values)

OPS = load_ops()
SWEEP_KINDS = ("unary", "unary_float", "binary", "ternary", "reduce", "reduce_all", "reduce_one",
               "reduce_opt", "softmax")
SWEPT = [e for e in OPS if e["test"].get("kind") in SWEEP_KINDS]


def hint(e, key, default=None):
    return e["test"].get(key, default)


def differentiable(e):
    default = bool(e.get("derivatives")) or "Composite" in e.get("dispatch", {})
    return hint(e, "grad", default)


def has_derivative(e):
    """differentiable, and some derivative is implemented (heaviside's backward raises)."""
    formulas = (e.get("derivatives") or {}).values()
    return differentiable(e) and not (formulas and all(
        str(f).startswith("not_implemented(") for f in formulas))


# ---------------------------------------------------------------- cases
# A case is (id, [arg specs], extra kwargs). An arg spec is ("t", shape, layout, dtype-or-None)
# for a tensor (None: the swept dtype) or ("s", value) for a Python scalar.

# Large enough (77,100 elements) to split across threads and take the vectorized loops.
BIG = (300, 257)
LARGE_DTYPES = ("float32", "int64", "bfloat16")


def T(shape, layout="contig", dtype=None):
    return ("t", tuple(shape), layout, dtype)


def S(value):
    return ("s", value)


UNARY_CASES = [
    ("contig", [T((3, 4))], {}), ("transposed", [T((3, 4), "transposed")], {}),
    ("sliced", [T((3, 4), "sliced")], {}), ("expanded", [T((3, 4), "expanded")], {}),
    ("zero_dim", [T(())], {}), ("empty", [T((0, 3))], {}), ("special", [T((3, 4), "special")], {}),
    ("large", [T(BIG)], {}), ("large_transposed", [T(BIG, "transposed")], {}),
]

BINARY_CASES = [
    ("same", [T((3, 4)), T((3, 4))], {}),
    ("transposed", [T((3, 4), "transposed"), T((3, 4), "sliced")], {}),
    ("expanded", [T((3, 4), "expanded"), T((3, 4), "transposed")], {}),
    ("bcast", [T((3, 1)), T((1, 4))], {}),
    ("bcast_rank", [T((2, 3, 4)), T((3, 1))], {}),
    ("bcast_self", [T((4,)), T((3, 4))], {}),
    ("zero_dim_other", [T((3, 4)), T(())], {}),
    ("zero_dim_self", [T(()), T((3, 4))], {}),
    ("zero_dim", [T(()), T(())], {}),
    ("empty", [T((0, 4)), T((4,))], {}),
    ("special", [T((3, 4), "special"), T((3, 4), "special")], {}),
    ("large", [T(BIG, "transposed"), T(BIG)], {}),
    ("large_bcast", [T((BIG[0], 1)), T(BIG[1:], "sliced")], {}),
]

# Mixed-dtype promotion: (self dtype, other dtype or ("0d", dtype) or a Python scalar).
MIXED = [("int64", "float32"), ("int32", 2.5), ("uint8", "int8"), ("bool", "int32"),
         ("float16", "float32"), ("bfloat16", "float16"), ("int64", ("0d", "float64")),
         ("float32", ("0d", "float64")), ("int32", "int64"), ("float16", 2.5), ("int16", 3),
         ("float32", ("0d", "int64")), ("bool", True), ("uint8", ("0d", "int64"))]

TERNARY_CASES = [
    ("same", [T((3, 4)), T((3, 4)), T((3, 4))], {}),
    ("strided", [T((3, 4), "transposed"), T((3, 4), "sliced"), T((3, 4), "expanded")], {}),
    ("bcast", [T((3, 4)), T((3, 1)), T((4,))], {}),
    ("bcast_self", [T((1, 4)), T((3, 1)), T((4,))], {}),
    ("zero_dim", [T(()), T(()), T(())], {}),
    ("zero_dim_mix", [T((3, 4)), T(()), T((4,))], {}),
    ("empty", [T((0, 4)), T((0, 4)), T((4,))], {}),
    ("special", [T((3, 4), "special"), T((3, 4), "special"), T((3, 4), "special")], {}),
    ("mixed", [T((3, 4), "contig", "float64"), T((3, 4), "contig", "float32"), T((4,))], {}),
    ("large", [T(BIG, "transposed"), T(BIG), T(BIG[1:])], {}),
]

REDUCE_CASES = [
    ("contig_d1", [T((3, 4))], {"dim": 1}),
    ("contig_dneg_keep", [T((3, 4))], {"dim": -1, "keepdim": True}),
    ("contig_d01", [T((3, 4))], {"dim": (0, 1)}),
    ("contig_dall", [T((3, 4))], {"dim": ()}),
    ("transposed_d0", [T((3, 4), "transposed")], {"dim": 0}),
    ("sliced_d1_keep", [T((3, 4), "sliced")], {"dim": 1, "keepdim": True}),
    ("expanded_d0", [T((3, 4), "expanded")], {"dim": 0}),
    ("3d_d02_keep", [T((2, 3, 4), "transposed")], {"dim": (0, 2), "keepdim": True}),
    ("3d_d1", [T((2, 3, 4))], {"dim": 1}),
    ("zero_dim", [T(())], {"dim": 0}),
    ("empty_d0", [T((0, 4))], {"dim": 0}),
    ("empty_d1", [T((0, 4))], {"dim": 1}),
    ("bad_dim", [T((3, 4))], {"dim": 2}),
    ("special_d1", [T((3, 4), "special")], {"dim": 1}),
    ("large_d1", [T(BIG)], {"dim": 1}), ("large_d0", [T(BIG, "transposed")], {"dim": 0}),
    ("large_dall", [T(BIG)], {"dim": ()}),
]

REDUCE_ALL_CASES = [
    ("contig", [T((3, 4))], {}), ("transposed", [T((3, 4), "transposed")], {}),
    ("sliced", [T((3, 4), "sliced")], {}), ("expanded", [T((3, 4), "expanded")], {}),
    ("3d", [T((2, 3, 4), "transposed")], {}), ("zero_dim", [T(())], {}),
    ("empty", [T((0, 4))], {}), ("special", [T((3, 4), "special")], {}),
    ("large", [T(BIG, "transposed")], {}),
]

REDUCE_ONE_CASES = [
    ("contig_d0", [T((3, 4))], {"dim": 0}),
    ("contig_dneg_keep", [T((3, 4))], {"dim": -1, "keepdim": True}),
    ("transposed_d1", [T((3, 4), "transposed")], {"dim": 1}),
    ("sliced_d0_keep", [T((3, 4), "sliced")], {"dim": 0, "keepdim": True}),
    ("expanded_d0", [T((3, 4), "expanded")], {"dim": 0}),
    ("3d_d1_keep", [T((2, 3, 4), "transposed")], {"dim": 1, "keepdim": True}),
    ("zero_dim", [T(())], {"dim": 0}),
    ("empty_d0", [T((0, 4))], {"dim": 0}),
    ("empty_d1", [T((0, 4))], {"dim": 1}),
    ("bad_dim", [T((3, 4))], {"dim": -3}),
    ("special_d1", [T((3, 4), "special")], {"dim": 1}),
    ("large_d0", [T(BIG)], {"dim": 0}), ("large_d1", [T(BIG, "transposed")], {"dim": 1}),
]

REDUCE_OPT_CASES = [
    ("none", [T((3, 4))], {}),
    ("none_keep", [T((3, 4))], {"keepdim": True}),
    ("d0", [T((3, 4))], {"dim": 0}),
    ("dneg_keep", [T((3, 4))], {"dim": -1, "keepdim": True}),
    ("transposed_d1", [T((3, 4), "transposed")], {"dim": 1}),
    ("3d_d1", [T((2, 3, 4), "sliced")], {"dim": 1}),
    ("zero_dim", [T(())], {}),
    ("empty", [T((0, 4))], {}),
    ("empty_d1", [T((0, 4))], {"dim": 1}),
    ("special", [T((3, 4), "special")], {"dim": 1}),
    ("large", [T(BIG)], {}), ("large_d0", [T(BIG, "transposed")], {"dim": 0}),
]

SOFTMAX_CASES = [
    ("contig_dneg", [T((3, 4))], {"dim": -1}),
    ("contig_d0", [T((3, 4))], {"dim": 0}),
    ("transposed_d1", [T((3, 4), "transposed")], {"dim": 1}),
    ("expanded_d0", [T((3, 4), "expanded")], {"dim": 0}),
    ("3d_d1", [T((2, 3, 4), "sliced")], {"dim": 1}),
    ("zero_dim", [T(())], {"dim": 0}),
    ("empty_d1", [T((0, 4))], {"dim": 1}),
    ("special", [T((3, 4), "special")], {"dim": -1}),
    ("large", [T(BIG)], {"dim": -1}), ("large_d0", [T(BIG, "transposed")], {"dim": 0}),
]

CASES = {"unary": UNARY_CASES, "unary_float": UNARY_CASES, "binary": BINARY_CASES,
         "ternary": TERNARY_CASES, "reduce": REDUCE_CASES, "reduce_all": REDUCE_ALL_CASES,
         "reduce_one": REDUCE_ONE_CASES, "reduce_opt": REDUCE_OPT_CASES,
         "softmax": SOFTMAX_CASES}


def cases_for(e, dtype):
    kind = hint(e, "kind")
    out = []
    for cid, specs, kw in CASES[kind]:
        layouts = {s[2] for s in specs if s[0] == "t"}
        if ("special" in layouts and dtype not in FLOATS) or \
                (hint(e, "distinct") and layouts & {"special", "expanded"}):
            continue
        if hint(e, "needs_dim") and kw.get("dim") == ():
            continue
        if cid.startswith("large") and (dtype not in LARGE_DTYPES or (
                hint(e, "distinct") and dtype == "bfloat16")):
            continue  # distinct values beyond 256 are not representable in bfloat16
        if hint(e, "no_keepdim"):
            if "keepdim" in kw:
                continue
        out.append((cid, specs, kw))
    if kind == "binary":
        if e.get("scalar_overload"):
            value = True if dtype == "bool" else (2.5 if dtype in FLOATS else 3)
            out.append(("pyscalar", [T((3, 4)), S(value)], {}))
            out.append(("pyscalar_0d", [T(()), S(value)], {}))
    return out


def mixed_cases(e):
    allowed = DTYPE_SETS[hint(e, "dtypes", "all")]
    out = []
    for a, b in MIXED:
        if a not in allowed:
            continue
        if isinstance(b, str):
            if b not in allowed:
                continue
            spec = T((3, 4), "contig", b)
        elif isinstance(b, tuple):
            if b[1] not in allowed:
                continue
            spec = T((), "contig", b[1])
        else:
            if not e.get("scalar_overload"):
                continue
            spec = S(b)
        bid = b if not isinstance(b, tuple) else "0d_" + b[1]
        out.append((a, f"mixed_{a}_{bid}", [T((3, 4)), spec], {}))
    return out


def params():
    out = []
    for e in SWEPT:
        for dtype in DTYPE_SETS[hint(e, "dtypes", "all")]:
            for cid, specs, kw in cases_for(e, dtype):
                for i, extra in enumerate(hint(e, "kwargs", [{}])):
                    out.append(pytest.param(e["name"], dtype, specs, {**kw, **extra},
                                            id=f"{e['name']}-{dtype}-{cid}-k{i}"))
        if hint(e, "kind") in ("binary", "ternary"):
            for dtype, cid, specs, kw in mixed_cases(e):
                for i, extra in enumerate(hint(e, "kwargs", [{}])):
                    out.append(pytest.param(e["name"], dtype, specs, {**kw, **extra},
                                            id=f"{e['name']}-{cid}-k{i}"))
    return out


BY_NAME = {e["name"]: e for e in OPS}


# ---------------------------------------------------------------- building arguments

def domain_for(e, i, n):
    d = hint(e, "domain")
    if d == "nonzero_other":
        return "nonzero" if i == 1 else None
    if d == "nonzero_last":
        return "nonzero" if i == n - 1 else None
    return d


def build(e, dtype, specs, seed, grad=False):
    """Fresh argument list: Pairs for tensors, plain values for Python scalars."""
    rng = np.random.default_rng(seed)
    args = []
    for i, s in enumerate(specs):
        if s[0] == "s":
            args.append(s[1])
            continue
        _, shape, layout, dt = s
        dt = dt or dtype
        special = layout == "special"
        vals = make_values(rng, shape, dt, domain_for(e, i, len(specs)),
                           hint(e, "distinct", False), special)
        p = pair_from_values(vals, dt, "contig" if special else layout)
        if grad and dt in FLOATS:
            p.t = p.t.detach().requires_grad_(True)
            p.r = p.r.detach().requires_grad_(True)
        args.append(p)
    return args


def split(args):
    return ([a.t if isinstance(a, Pair) else a for a in args],
            [a.r if isinstance(a, Pair) else a for a in args])


def lib_kwargs(kwargs, lib):
    """Converts dtype names in test kwargs to the library's dtype objects."""
    return {k: (getattr(lib, v) if k == "dtype" else v) for k, v in kwargs.items()}


def resolve(path):
    obj = torch
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def torch_function(e):
    if hint(e, "torch"):
        return resolve(hint(e, "torch"))
    if hint(e, "function", True) and "function" in e["variants"]:
        return getattr(torch, e["base"])
    return lambda x, *a, **k: getattr(x, e["base"])(*a, **k)


def torch_out_function(e):
    path = hint(e, "torch")
    if path and path.startswith("torch.nn.functional."):
        return getattr(torch._C._nn, e["base"])
    if path and path.startswith("torch.special."):  # these take out= as they are
        return resolve(path)
    return getattr(torch, e["base"])


def torch_inplace(e):
    name = e["base"] + "_"
    if hasattr(torch.Tensor, name):
        return lambda x, *a, **k: getattr(x, name)(*a, **k)
    return getattr(torch._C._nn, name)


def retorch_inplace(e):
    name = e["base"] + "_"
    if "method" in e["variants"]:
        return lambda x, *a, **k: getattr(x, name)(*a, **k)
    return getattr(retorch, name)


def empty_like_result(t, lib, dtype_override=None, size0=False):
    if isinstance(t, (tuple, list)):
        return tuple(empty_like_result(x, lib, dtype_override, size0) for x in t)
    name = dtype_override or dtype_name(t.dtype)
    return lib.empty((0,) if size0 else tuple(t.shape), dtype=getattr(lib, name))


def same_tensor(a, b):
    return a.data_ptr() == b.data_ptr() and tuple(a.shape) == tuple(b.shape)


# ---------------------------------------------------------------- the sweep

@pytest.mark.parametrize("name,dtype,specs,kwargs", params())
def test_op(name, dtype, specs, kwargs):
    e = BY_NAME[name]
    seed = zlib.crc32(f"{name}{dtype}{specs}{kwargs}".encode())
    fresh = functools.partial(build, e, dtype, specs, seed)
    tkw, rkw = lib_kwargs(kwargs, torch), lib_kwargs(kwargs, retorch)
    tfn = torch_function(e)
    targs, rargs = split(fresh())
    t_out, t_err = outcome(call_torch, tfn, targs, tkw)

    def alt():
        return call_torch(tfn, split(fresh())[0], tkw, upcast=True)

    variants = e["variants"]
    if hint(e, "function", True) and "function" in variants:
        r_out, r_err = outcome(getattr(retorch, e["base"]), *rargs, **rkw)
        if not check_same_error(t_err, r_err, "function"):
            assert_matches(r_out, t_out, alt, "function")
    if "method" in variants:
        r_out, r_err = outcome(lambda: getattr(rargs[0], e["base"])(*rargs[1:], **rkw))
        if not check_same_error(t_err, r_err, "method"):
            assert_matches(r_out, t_out, alt, "method")
            if e["base"] == "contiguous":
                assert r_out.is_contiguous()
    if "inplace" in variants:
        check_inplace(e, fresh, tkw, rkw)
    if "out" in variants:
        check_out(e, fresh, t_out, t_err, tkw, rkw)


def check_inplace(e, fresh, tkw, rkw):
    """self.op_(...) raises iff torch's does (e.g. a float result into an int self), else
    returns self holding torch's values."""
    tfn = torch_inplace(e)
    targs, rargs = split(fresh())
    t_res, t_err = outcome(call_torch, tfn, targs, tkw)
    r_res, r_err = outcome(retorch_inplace(e), *rargs, **rkw)
    if check_same_error(t_err, r_err, "inplace"):
        return
    assert same_tensor(r_res, rargs[0]), "inplace: must return self"

    def alt():
        return call_torch(tfn, split(fresh())[0], tkw, upcast=True)
    assert_matches(rargs[0], targs[0], alt, "inplace self")


def unsafe_out_dtype(name):
    """An out= dtype the result can't be cast to (float -> int, int -> bool)."""
    if name in FLOATS:
        return "int64"
    return None if name == "bool" else "bool"


def check_out(e, fresh, t_ref, t_err, tkw, rkw):
    """out= with the exact shape, with a size-0 tensor (resized) and with an unsafe dtype."""
    tfn, rfn = torch_out_function(e), getattr(retorch, e["base"])
    specs = [(None, False)]
    if t_err is None:
        specs.append((None, True))
        bad = unsafe_out_dtype(dtype_name(t_ref.dtype))
        if bad:
            specs.append((bad, False))
    for dt, size0 in specs:
        targs, rargs = split(fresh())
        ref = t_ref if t_ref is not None else targs[0]
        t_o = empty_like_result(ref, torch, dt, size0)
        r_o = empty_like_result(ref, retorch, dt, size0)
        what = f"out(dtype={dt}, size0={size0})"
        t_res, t_oerr = outcome(call_torch, tfn, targs, {**tkw, "out": t_o})
        r_res, r_oerr = outcome(rfn, *rargs, **rkw, out=r_o)
        if check_same_error(t_oerr, r_oerr, what):
            continue
        assert same_tensor(r_res, r_o), f"{what}: must return out"

        def alt():
            o = empty_like_result(ref, torch, dt, size0)
            call_torch(tfn, split(fresh())[0], {**tkw, "out": o}, upcast=True)
            return o
        assert_matches(r_o, t_o, alt, what)


# ---------------------------------------------------------------- gradients

def first(x):
    return x[0] if isinstance(x, (tuple, list)) else x


def grad_params():
    out = []
    for e in SWEPT:
        if "float32" not in DTYPE_SETS[hint(e, "dtypes", "all")]:
            continue
        for cid, specs, kw in cases_for(e, "float32"):
            if "special" in cid or "bad_dim" in cid:
                continue
            for i, extra in enumerate(hint(e, "kwargs", [{}])):
                if extra.get("dtype", "float64") not in FLOATS:
                    continue  # an integer result has no gradient (torch 1.13 asserts)
                out.append(pytest.param(e["name"], specs, {**kw, **extra},
                                        id=f"{e['name']}-{cid}-k{i}"))
    return out


@pytest.mark.parametrize("name,specs,kwargs", grad_params())
def test_grad(name, specs, kwargs):
    """float32 gradients against torch.autograd.grad with a random grad_output."""
    e = BY_NAME[name]
    seed = zlib.crc32(f"grad{name}{specs}{kwargs}".encode())
    args = build(e, "float32", specs, seed, grad=True)
    targs, rargs = split(args)
    tkw, rkw = lib_kwargs(kwargs, torch), lib_kwargs(kwargs, retorch)
    t_out, t_err = outcome(torch_function(e), *targs, **tkw)
    r_out, r_err = outcome(getattr(retorch, e["base"]) if hint(e, "function", True) and
                           "function" in e["variants"] else
                           (lambda x, *a, **k: getattr(x, e["base"])(*a, **k)), *rargs, **rkw)
    if check_same_error(t_err, r_err, "forward"):
        return
    t_out, r_out = first(t_out), first(r_out)
    assert r_out.requires_grad == t_out.requires_grad, "output requires_grad differs from torch"
    assert t_out.requires_grad == bool(differentiable(e)) or not any(
        isinstance(a, Pair) for a in args), f"ops.yaml grad hint disagrees with torch for {name}"
    if not t_out.requires_grad:
        return
    inputs = [a for a in args if isinstance(a, Pair)]
    compare_grads(t_out, r_out, inputs, seed, "grad")
    if "inplace" in e["variants"]:
        # The in-place variant on a non-leaf copy: history is rebased onto the new node.
        t_self, r_self = targs[0] * 1, rargs[0] * 1
        t_res, t_err = outcome(torch_inplace(e), t_self, *targs[1:], **tkw)
        r_res, r_err = outcome(retorch_inplace(e), r_self, *rargs[1:], **rkw)
        if not check_same_error(t_err, r_err, "inplace forward"):
            compare_grads(t_res, r_res, inputs, seed, "inplace grad")


def compare_grads(t_out, r_out, inputs, seed, what):
    g = make_values(np.random.default_rng(seed + 1), tuple(t_out.shape), dtype_name(t_out.dtype))
    t_g, t_err = outcome(torch.autograd.grad, t_out, [p.t for p in inputs],
                         torch.from_numpy(g.copy()), allow_unused=True)
    r_g, r_err = outcome(retorch.autograd.grad, r_out, [p.r for p in inputs],
                         retorch.from_numpy(g.copy()), allow_unused=True)
    if t_err is not None or r_err is not None:  # a derivative torch does not implement either
        assert t_err is not None and isinstance(r_err, type(t_err)), (
            f"{what}: torch raised {t_err!r}, retorch raised {r_err!r}")
        return
    for i, (rg, tg) in enumerate(zip(r_g, t_g)):
        if tg is None:
            assert rg is None or not np.any(rg.numpy()), f"{what}[{i}] should be zero/None"
            continue
        assert rg is not None, f"{what}[{i}] is None, torch has a gradient"
        assert_close(rg, tg, f"{what}[{i}]", rtol=1e-4, atol=1e-5)


GRADCHECK_SHAPES = {
    "unary": ([(2, 3)], [{}]), "unary_float": ([(2, 3)], [{}]),
    "binary": ([(2, 3), (3,)], [{}]), "ternary": ([(2, 3), (3,), (2, 1)], [{}]),
    "reduce": ([(2, 3)], [{"dim": 1}, {"dim": (0, 1), "keepdim": True}]),
    "reduce_all": ([(2, 3)], [{}]), "reduce_one": ([(2, 3)], [{"dim": 1}]),
    "reduce_opt": ([(2, 3)], [{"dim": 1}]), "softmax": ([(2, 3)], [{"dim": 1}]),
}


def gradcheck_params():
    out = []
    for e in SWEPT:
        if not has_derivative(e) or "float64" not in DTYPE_SETS[hint(e, "dtypes", "all")]:
            continue
        shapes, kws = GRADCHECK_SHAPES[hint(e, "kind")]
        for j, kw in enumerate(kws):
            for i, extra in enumerate(hint(e, "kwargs", [{}])):
                if extra.get("dtype", "float64") not in FLOATS:
                    continue
                out.append(pytest.param(e["name"], shapes, {**kw, **extra},
                                        id=f"{e['name']}-d{j}-k{i}"))
    return out


@pytest.mark.parametrize("name,shapes,kwargs", gradcheck_params())
def test_gradcheck(name, shapes, kwargs):
    """retorch.autograd.gradcheck in float64 on tiny inputs."""
    e = BY_NAME[name]
    specs = [T(s) for s in shapes]
    args = build(e, "float64", specs, zlib.crc32(name.encode()), grad=True)
    fn = getattr(retorch, e["base"]) if "function" in e["variants"] and \
        hint(e, "function", True) else (lambda x, *a, **k: getattr(x, e["base"])(*a, **k))
    rkw = lib_kwargs(kwargs, retorch)
    assert retorch.autograd.gradcheck(lambda *xs: first(fn(*xs, **rkw)), [a.r for a in args])

