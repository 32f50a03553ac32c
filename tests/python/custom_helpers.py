"""Helpers for hand-written oracle tests: one lambda run on torch and retorch, values and grads."""
import contextlib

import numpy as np
import pytest
import torch

import retorch
from oracle import (HALF_MSG, Pair, assert_close, call_torch, check_same_error, dtype_name,
                    make_pair,
                    outcome, pair_from_values)


def P(rng, shape, dtype="float32", layout="contig", **kw):
    """A random paired tensor (see oracle.make_values for domain/distinct)."""
    return make_pair(rng, shape, dtype, layout, **kw)


def I(values, dtype="int64", layout="contig"):
    """A paired tensor holding the given (index) values."""
    return pair_from_values(np.array(values, dtype=dtype if dtype != "bfloat16" else "float32"),
                            dtype, layout)


def _split(args):
    return ([a.t if isinstance(a, Pair) else a for a in args],
            [a.r if isinstance(a, Pair) else a for a in args])


def _check_view(r, t, what):
    if isinstance(t, (tuple, list)):
        for i, (ri, ti) in enumerate(zip(r, t)):
            _check_view(ri, ti, f"{what}[{i}]")
        return
    if t.numel() == 0:
        return
    # Strides of size-1 dims carry no meaning (torch itself is inconsistent about them).
    rs = [s for s, n in zip(r.stride(), r.shape) if n != 1]
    ts = [s for s, n in zip(t.stride(), t.shape) if n != 1]
    assert rs == ts, f"{what}: strides {r.stride()} vs torch {t.stride()}"
    assert r.storage_offset() == t.storage_offset(), f"{what}: storage offset differs"


def aten(L, name):
    """The op `name` as a function: torch.ops.aten.<name> for torch, retorch.<name>."""
    return getattr(L.ops.aten, name) if L.__name__ == "torch" else getattr(L, name)


def both(f, *args, what="call", view=False, **tol):
    """Runs f(lib, *args) with torch and retorch tensors: both raise the same class or both
    return the same values (and, with view=True, the same strides and storage offset)."""
    targs, rargs = _split(args)
    t_out, t_err = outcome(call_torch, lambda *a: f(torch, *a), targs)
    r_out, r_err = outcome(lambda: f(retorch, *rargs))
    if t_err is not None and r_err is None and HALF_MSG.search(str(t_err)):
        t_out, t_err = _float32_reference(f, targs, str(t_err))
    if check_same_error(t_err, r_err, what):
        return None
    try:
        assert_close(r_out, t_out, what, **tol)
    except (AssertionError, pytest.fail.Exception):
        # Half/BFloat16: torch computed in float32 and rounded once is accepted too (see
        # oracle.assert_matches).
        if not _has_low_precision(t_out):
            raise
        alt, _ = _float32_reference(f, targs, "'Half'" if _has_low_precision(t_out) == "float16"
                                    else "'BFloat16'")
        assert_close(r_out, alt, what + " (vs torch computed in float32)", **tol)
    if view:
        _check_view(r_out, t_out, what)
    return r_out


class _Float32Torch:
    """torch with float16/bfloat16 replaced by float32, for references torch 1.13 lacks."""
    __name__ = "torch"

    def __getattr__(self, name):
        if name in ("float16", "half", "bfloat16"):
            return torch.float32
        return getattr(torch, name)


def _float32_reference(f, targs, message):
    """f computed in float32 by torch, cast to the half type torch has no kernel for."""
    low = torch.float16 if "'Half'" in message else torch.bfloat16

    def down(x):
        if isinstance(x, (tuple, list)):
            return type(x)(down(y) for y in x)
        return x.to(low) if isinstance(x, torch.Tensor) and x.dtype in (
            torch.float32, torch.float64) else x
    out, err = outcome(call_torch, lambda *a: f(_Float32Torch(), *a), targs, None, True)
    return (down(out) if err is None else None), err


def raises_like_torch(f, *args, what="error"):
    """Both libraries raise, with the same exception class."""
    targs, rargs = _split(args)
    _, t_err = outcome(lambda: f(torch, *targs))
    _, r_err = outcome(lambda: f(retorch, *rargs))
    assert t_err is not None, f"{what}: torch did not raise"
    check_same_error(t_err, r_err, what)


def shares_storage(f, x, what="write through view"):
    """Filling the view f(lib, base) with 7 changes the base exactly as in torch."""
    both(lambda L, b: (f(L, b).fill_(7), b)[1], x, what=what)


def _grad_inputs(args):
    targs, rargs, tin, rin = [], [], [], []
    for a in args:
        if isinstance(a, Pair) and dtype_name(a.t.dtype) in ("float32", "float64"):
            t, r = a.t.detach().requires_grad_(True), a.r.detach().requires_grad_(True)
            tin.append(t)
            rin.append(r)
            targs.append(t)
            rargs.append(r)
        else:
            targs.append(a.t if isinstance(a, Pair) else a)
            rargs.append(a.r if isinstance(a, Pair) else a)
    return targs, rargs, tin, rin


def _has_low_precision(t):
    """'float16' / 'bfloat16' when t (or an element of it) has that dtype, else None."""
    if isinstance(t, (tuple, list)):
        return next((d for d in map(_has_low_precision, t) if d), None)
    if isinstance(t, torch.Tensor) and t.dtype in (torch.float16, torch.bfloat16):
        return dtype_name(t.dtype)
    return None


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def grads(f, *args, seed=0, what="grad", rtol=1e-4, atol=1e-5):
    """Gradients of f(lib, *args) (every output, random grad_outputs) against torch."""
    targs, rargs, tin, rin = _grad_inputs(args)
    t_outs, r_outs = _as_list(f(torch, *targs)), _as_list(f(retorch, *rargs))
    assert [r.requires_grad for r in r_outs] == [t.requires_grad for t in t_outs], \
        f"{what}: requires_grad of outputs differs from torch"
    keep = [i for i, t in enumerate(t_outs) if t.requires_grad]
    if not keep:
        return
    rng = np.random.default_rng(seed)
    gs = [rng.uniform(-1, 1, tuple(t_outs[i].shape)).astype(dtype_name(t_outs[i].dtype))
          for i in keep]
    t_g = torch.autograd.grad([t_outs[i] for i in keep], tin,
                              [torch.from_numpy(g) for g in gs], allow_unused=True)
    r_g = retorch.autograd.grad([r_outs[i] for i in keep], rin,
                                [retorch.from_numpy(g) for g in gs], allow_unused=True)
    for i, (rg, tg) in enumerate(zip(r_g, t_g)):
        if tg is None:
            assert rg is None or not np.any(rg.numpy()), f"{what}[{i}]: expected no gradient"
            continue
        assert rg is not None, f"{what}[{i}]: retorch gives no gradient, torch does"
        assert_close(rg, tg, f"{what}[{i}]", rtol=rtol, atol=atol)


def gradcheck(f, *args):
    """retorch.autograd.gradcheck of f(retorch, *args) w.r.t. its float64 tensor arguments."""
    _, rargs, _, rin = _grad_inputs(args)
    slots = [i for i, a in enumerate(rargs) if any(a is x for x in rin)]

    def fn(*xs):
        full = list(rargs)
        for i, x in zip(slots, xs):
            full[i] = x
        out = f(retorch, *full)
        return tuple(out) if isinstance(out, (tuple, list)) else out
    assert retorch.autograd.gradcheck(fn, rin)


def gradgradcheck(f, *args):
    """retorch.autograd.gradgradcheck of f(retorch, *args) w.r.t. its float64 tensor arguments."""
    rargs = [a.r.detach().requires_grad_(a.r.dtype == retorch.float64) if isinstance(a, Pair)
             else a for a in args]
    slots = [i for i, a in enumerate(rargs) if isinstance(a, retorch.Tensor) and a.requires_grad]

    def fn(*xs):
        full = list(rargs)
        for i, x in zip(slots, xs):
            full[i] = x
        return f(retorch, *full)
    assert retorch.autograd.gradgradcheck(fn, [rargs[i] for i in slots])


def seeded(fn, seed):
    """fn() after retorch.manual_seed(seed)."""
    retorch.manual_seed(seed)
    return fn()


ISAS = ("DEFAULT", "AVX2", "AVX512")  # retorch.backends.cpu's capabilities, lowest first


def supported_isas():
    """The capabilities this CPU can run, lowest first."""
    top = retorch.backends.cpu.supported_cpu_capability()
    return ISAS[:ISAS.index(top) + 1]


@contextlib.contextmanager
def cpu_isa(name):
    """Runs the block with the kernels capped at capability `name`, then restores the cap."""
    cpu = retorch.backends.cpu
    before = cpu.get_cpu_capability()
    cpu.set_cpu_capability(name)
    try:
        assert cpu.get_cpu_capability() == name
        yield name
    finally:
        cpu.set_cpu_capability(before)
