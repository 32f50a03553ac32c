"""Runs the samples of torch 1.13's OpInfo database (torch.testing._internal) on torch and retorch
and reports where values, dtypes, shapes or float64 gradients differ: torch's own test inputs
(broadcasting, strides, kwargs, empty and 0-d tensors) as an oracle for every op both have."""
import math
import re
import signal
import sys
import types

import torch

import retorch


def load_op_db():
    """torch's OpInfo list, or None where this torch lacks it. Its test module imports
    expecttest (a PyPI package for torch's own expect-tests, which nothing here uses) only for
    its TestCase base and ACCEPT flag: a stand-in module provides those when it is missing."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        import unittest
        stub = types.ModuleType("expecttest")
        stub.ACCEPT = False
        stub.TestCase = unittest.TestCase
        sys.modules["expecttest"] = stub
    rng = torch.get_rng_state()
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except Exception:  # noqa: BLE001 (any failure of torch's test package: no oracle)
        return None
    finally:
        # Importing torch's test utilities freezes torch.backends' flags (its
        # disable_global_flags) and reseeds torch; other tests in this process set those flags
        # to compare them with retorch's, and draw from torch's generator.
        setattr(torch.backends, "__allow_nonbracketed_mutation_flag", True)
        torch.set_rng_state(rng)
    return op_db


DTYPES = {torch.float32: retorch.float32, torch.float64: retorch.float64,
          torch.int64: retorch.int64, torch.int32: retorch.int32, torch.bool: retorch.bool,
          torch.bfloat16: retorch.bfloat16, torch.float16: retorch.float16,
          torch.uint8: retorch.uint8, torch.int8: retorch.int8, torch.int16: retorch.int16}
TORCH_DTYPES = {v: k for k, v in DTYPES.items()}
# The dtypes each op is checked in (where torch supports them on the cpu).
CHECKED = (torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.int32,
           torch.int16, torch.int8, torch.uint8, torch.float16)
# rtol, atol per dtype: the oracle helpers' float tolerances widened for summation order.
TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-7, 1e-7), torch.bfloat16: (3.2e-2, 1e-2),
       torch.float16: (1e-2, 1e-3)}


class Unsupported(Exception):
    """A sample whose arguments retorch has no counterpart for (complex, sparse, callables)."""


# Storage (data pointer, dtype) -> its retorch copy, for the sample being converted: tensors
# that share memory in torch's sample (an out= that is a view of the input) share it here too.
_SHARED = {}


def _tensor_to_rt(t):
    if t.dtype not in DTYPES or t.layout != torch.strided or t.device.type != "cpu":
        raise Unsupported(f"{t.dtype} {t.layout} {t.device}")
    t = t.detach()
    extent = t.storage_offset() + sum((n - 1) * st for n, st in zip(t.shape, t.stride())) + 1
    if t.numel() and extent > t.storage().size():  # (an earlier sample's out= shrank it)
        raise Unsupported("a tensor past the end of its storage")
    key = (t.storage().data_ptr(), t.dtype)
    if key not in _SHARED or _SHARED[key].numel() < t.storage().size():
        # The whole storage, so torch's strides and storage offset carry over.
        whole = torch.empty(0, dtype=t.dtype).set_(t.storage())
        if t.dtype == torch.bfloat16:
            r = retorch.from_numpy(whole.view(torch.int16).numpy().copy()).view(retorch.bfloat16)
        else:
            r = retorch.from_numpy(whole.numpy().copy())
        _SHARED[key] = r
    return _SHARED[key].as_strided(list(t.shape), list(t.stride()), t.storage_offset())


def new_sample():
    """Forgets the storages of the last sample converted (call before converting the next)."""
    _SHARED.clear()


def convert(sample, leaves=None):
    """retorch's (args, kwargs) for a sample (Unsupported where it has no counterpart)."""
    new_sample()
    args = (to_rt(sample.input, leaves),) + tuple(to_rt(a, leaves) for a in sample.args)
    return args, to_rt(sample.kwargs, leaves)


def to_rt(x, leaves=None):
    """retorch's counterpart of a sample argument. Tensors requiring grad become contiguous
    retorch leaves, recorded as (torch tensor, retorch leaf) pairs in `leaves`."""
    if isinstance(x, torch.Tensor):
        r = _tensor_to_rt(x)
        if leaves is not None and x.requires_grad:
            r = r.contiguous().detach().requires_grad_(True)
            leaves.append((x, r))
        return r
    if isinstance(x, torch.dtype):
        if x not in DTYPES:
            raise Unsupported(str(x))
        return DTYPES[x]
    if isinstance(x, torch.device):
        return retorch.device(str(x))
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.memory_format):
        if not hasattr(retorch, str(x).split(".")[-1]):
            raise Unsupported(str(x))
        return getattr(retorch, str(x).split(".")[-1])
    if isinstance(x, (list, tuple)):
        items = [to_rt(e, leaves) for e in x]
        return items if isinstance(x, list) else tuple(items)
    if isinstance(x, dict):
        return {k: to_rt(v, leaves) for k, v in x.items()}
    if callable(x) and not isinstance(x, type):
        raise Unsupported("a callable argument")
    return x


def to_torch(x):
    if isinstance(x, retorch.Tensor):
        x = x.detach().contiguous()
        if x.dtype == retorch.bfloat16:
            return torch.from_numpy(x.view(retorch.int16).numpy().copy()).view(torch.bfloat16)
        return torch.from_numpy(x.numpy().copy())
    if isinstance(x, (list, tuple)):
        return [to_torch(e) for e in x]
    if isinstance(x, retorch.dtype):
        return TORCH_DTYPES.get(x, x)
    return x


def flat(x):
    if isinstance(x, (list, tuple)):
        return [y for e in x for y in flat(e)]
    return [x]


def retorch_callable(op):
    """The retorch function for an OpInfo: the same dotted name under retorch, a Tensor method
    for dunder and method-only names, and for OpInfos whose op is a lambda of torch's test
    module (argument reorderings such as polygamma's), that lambda with `torch` meaning retorch."""
    fn = op.op
    if (getattr(fn, "__module__", "") or "").startswith("torch.testing") and \
            hasattr(fn, "__globals__"):
        env = fn.__globals__

        def call(*args, **kwargs):
            saved, env["torch"] = env["torch"], retorch
            try:
                return fn(*args, **kwargs)
            finally:
                env["torch"] = saved
        return call
    name = op.name
    if name.startswith("__"):
        return lambda self, *a, **k: getattr(self, name)(*a, **k)
    target = retorch
    *path, last = name.split(".")
    for part in path:
        target = getattr(target, part, None)
        if target is None:
            return None
    fn = getattr(target, last, None)
    if fn is None and not path and hasattr(retorch.Tensor, last):
        return lambda self, *a, **k: getattr(self, last)(*a, **k)
    return fn


def compare(t_out, r_out, dtype):
    """None when retorch's outputs match torch's, else what differs."""
    tf, rf = flat(t_out), flat(to_torch(r_out))
    if len(tf) != len(rf):
        return f"{len(rf)} outputs, torch has {len(tf)}"
    for i, (a, b) in enumerate(zip(tf, rf)):
        if isinstance(a, torch.Tensor):
            if not isinstance(b, torch.Tensor):
                return f"output {i} is a {type(b).__name__}, torch's a Tensor"
            if a.dtype != b.dtype or a.shape != b.shape:
                return f"output {i}: {b.dtype}{list(b.shape)}, torch {a.dtype}{list(a.shape)}"
            rtol, atol = TOL.get(a.dtype, (0, 0))
            try:
                torch.testing.assert_close(b, a, rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError as e:
                return f"output {i}: " + " ".join(str(e).split("\n")[2:4])
        elif isinstance(a, float) and isinstance(b, (int, float)):
            if not (math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7) or (a != a and b != b)):
                return f"output {i}: {b!r}, torch {a!r}"
        elif isinstance(a, (int, bool)) and a != b:
            return f"output {i}: {b!r}, torch {a!r}"
    return None


class Timeout(Exception):
    pass


def _alarm(*_):
    raise Timeout()


def describe(sample):
    def d(x):  # shapes, never values (torch's repr of some error samples' tensors crashes)
        if isinstance(x, torch.Tensor):
            return list(x.shape)
        return type(x)(d(e) for e in x) if isinstance(x, (list, tuple)) else x
    return (f"input {d(sample.input)} args {[d(a) for a in sample.args][:4]} "
            f"kwargs { {k: d(v) for k, v in sample.kwargs.items()} }")


def _upcast(x, dtype):
    """x with dtype's tensors in float64 (exact: every float32 and bfloat16 is a double)."""
    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64) if x.dtype == dtype else x
    if isinstance(x, (list, tuple)):
        items = [_upcast(e, dtype) for e in x]
        return items if isinstance(x, list) else tuple(items)
    if isinstance(x, dict):
        return {k: _upcast(v, dtype) for k, v in x.items()}
    return x


def exact_reference(op, sample, dtype, expected):
    """torch's result computed in float64 and rounded once to the dtypes of `expected`, or None.
    torch 1.13's reduced-precision kernels round intermediates (a bfloat16 bmm accumulates in
    bfloat16, a float32 layer norm of one element keeps E[x^2] - E[x]^2's rounding error), so
    a retorch result that matches this instead is as close as torch's or closer."""
    try:
        wide = op.op(_upcast(sample.input, dtype), *_upcast(sample.args, dtype),
                     **_upcast(sample.kwargs, dtype))
    except Exception:  # noqa: BLE001 (no float64 form of the sample)
        return None
    want, got = flat(expected), flat(wide)
    if len(want) != len(got):
        return None
    return [g.to(w.dtype) if isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor)
            and w.is_floating_point() else g for w, g in zip(want, got)]


def check_values(op, fn, dtype, limit=None, reference=False):
    """Problems with op's samples in dtype (its reference inputs, torch's larger set, where
    `reference`): (sample number, description) pairs."""
    problems = []
    torch.manual_seed(0)
    try:
        make = op.reference_inputs if reference else op.sample_inputs
        samples = list(make("cpu", dtype, requires_grad=False))
    except Exception:  # noqa: BLE001 (torch's generator fails for this dtype: nothing to check)
        return problems
    for n, s in enumerate(samples[:limit]):
        try:
            args, kwargs = convert(s)
        except Unsupported:
            continue
        try:
            expected = op.op(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001 (torch rejects the sample: error parity is tested elsewhere)
            continue
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(20)
        try:
            got = fn(*args, **kwargs)
            problem = compare(expected, got, dtype)
            if problem and dtype in (torch.float32, torch.bfloat16, torch.float16):
                exact = exact_reference(op, s, dtype, expected)
                if exact is not None and compare(exact, got, dtype) is None:
                    problem = None
        except Timeout:
            problem = "no result in 20 s"
        except Exception as e:  # noqa: BLE001 (a retorch failure is the finding)
            problem = f"raised {type(e).__name__}: {str(e)[:160]}"
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        if problem:
            problems.append((n, f"{dtype}: {describe(s)}: {problem}"))
    return problems


def check_variants(op, dtype):
    """Problems with op's method and in-place variants (Tensor.name, Tensor.name_) on its
    samples in dtype: the results, and for in-place the input after, must be torch's. Variants
    torch writes as lambdas (argument reorderings) are left out."""
    problems = []
    for kind, variant in (("method", op.method_variant), ("in-place", op.inplace_variant)):
        name = getattr(variant, "__name__", "<lambda>")
        if variant is None or name == "<lambda>":
            continue
        mine = getattr(retorch.Tensor, name, None)
        if mine is None:
            problems.append((-1, f"{kind}: retorch.Tensor has no {name}"))
            continue
        torch.manual_seed(0)
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
        except Exception:  # noqa: BLE001
            continue
        for n, s in enumerate(samples):
            try:
                args, kwargs = convert(s)
            except Unsupported:
                continue
            before = s.input.clone() if isinstance(s.input, torch.Tensor) else s.input
            try:
                expected = variant(before, *s.args, **s.kwargs)
            except Exception:  # noqa: BLE001 (torch rejects it, as in-place ops often do)
                continue
            try:
                problem = compare(expected, mine(*args, **kwargs), dtype)
                if problem is None and kind == "in-place":
                    problem = compare(before, args[0], dtype)
                    problem = problem and "the input after: " + problem
            except Exception as e:  # noqa: BLE001
                problem = f"raised {type(e).__name__}: {str(e)[:160]}"
            if problem:
                problems.append((n, f"{kind} {name}, {dtype}: {describe(s)}: {problem}"))
    return problems


def check_out(op, fn, dtype, limit=3):
    """Problems with op's out= form (into empty tensors of torch's result dtypes, which the
    call resizes) on its first samples."""
    problems = []
    torch.manual_seed(0)
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
    except Exception:  # noqa: BLE001
        return problems
    for n, s in enumerate(samples[:limit]):
        try:
            args, kwargs = convert(s)
            expected = op.op(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001 (no retorch form of the sample, or torch rejects it)
            continue
        results = [expected] if isinstance(expected, torch.Tensor) else \
            list(expected) if isinstance(expected, (tuple, list)) else [None]
        if not all(isinstance(t, torch.Tensor) and t.dtype in DTYPES for t in results):
            continue  # (a result holding a list, like histogramdd's edges, has no out= form)
        outs = [retorch.empty(0, dtype=DTYPES[t.dtype]) for t in results]
        try:
            returned = fn(*args, **kwargs, out=outs[0] if isinstance(expected, torch.Tensor)
                          else tuple(outs))
            problem = compare(expected, outs, dtype)
            if problem is None and any(r is not o for r, o in zip(flat(returned), outs)):
                problem = "the tensors returned are not the out= tensors"
        except Exception as e:  # noqa: BLE001
            problem = f"raised {type(e).__name__}: {str(e)[:160]}"
        if problem:
            problems.append((n, f"out=, {dtype}: {describe(s)}: {problem}"))
    return problems


def check_errors(op, fn):
    """Problems with op's error inputs (torch's OpInfo.error_inputs: arguments torch rejects, with
    the exception type and a regex of its message): retorch must raise the same type with a
    message the regex finds."""
    problems = []
    torch.manual_seed(0)
    try:
        errors = list(op.error_inputs("cpu"))
    except Exception:  # noqa: BLE001 (torch's generator fails: nothing to check)
        return problems
    for n, e in enumerate(errors):
        s = e.sample_input
        try:
            # (inputs that require grad keep it: torch's checks may differ then)
            args, kwargs = convert(s, [])
        except Unsupported:
            continue
        try:
            op.op(s.input, *s.args, **s.kwargs)
            continue  # (torch 1.13 accepts it: the database's expectation is a later torch's)
        except Exception:  # noqa: BLE001
            pass
        want = f"{e.error_type.__name__} matching {e.error_regex!r}"
        try:
            fn(*args, **kwargs)
            problems.append((n, f"error: {describe(s)}: no error, torch raises {want}"))
        except Exception as err:  # noqa: BLE001 (the error is what is checked)
            # (pybind11's TypeError lists the signatures where torch's argument parser names
            # the argument: the same refusal in other words)
            parser = isinstance(err, TypeError) and issubclass(TypeError, e.error_type) and \
                "incompatible function arguments" in str(err)
            if not parser and (not isinstance(err, e.error_type) or
                               not re.search(e.error_regex, str(err))):
                problems.append((n, f"error: {describe(s)}: raised {type(err).__name__}: "
                                    f"{str(err)[:160]}; torch raises {want}"))
    return problems


def check_grads(op, fn, limit=6):
    """Problems with the float64 gradients of sum(w * outputs) over op's first samples."""
    problems = []
    torch.manual_seed(0)
    try:
        samples = list(op.sample_inputs("cpu", torch.float64, requires_grad=True))
    except Exception:  # noqa: BLE001
        return problems
    for n, s in enumerate(samples[:limit]):
        leaves = []
        try:
            args, kwargs = convert(s, leaves)
        except Unsupported:
            continue
        if not leaves:
            continue
        try:
            outs = [o for o in flat(s.output_process_fn_grad(op.op(s.input, *s.args, **s.kwargs)))
                    if isinstance(o, torch.Tensor) and o.requires_grad]
            if not outs:
                continue
            gen = torch.Generator().manual_seed(1)
            weights = [torch.rand(o.shape, generator=gen, dtype=o.dtype) for o in outs]
            loss = sum((o * w).sum() for o, w in zip(outs, weights))
            expected = torch.autograd.grad(loss, [t for t, _ in leaves], allow_unused=True)
        except Exception:  # noqa: BLE001 (torch cannot differentiate the sample)
            continue
        try:
            routs = [o for o in flat(s.output_process_fn_grad(fn(*args, **kwargs)))
                     if isinstance(o, retorch.Tensor) and o.requires_grad]
            if len(routs) != len(outs):
                problems.append((n, f"grad: {describe(s)}: {len(routs)} differentiable outputs, "
                                    f"torch has {len(outs)}"))
                continue
            rloss = sum((o * to_rt(w)).sum() for o, w in zip(routs, weights))
            got = retorch.autograd.grad(rloss, [r for _, r in leaves], allow_unused=True)
        except Exception as e:  # noqa: BLE001
            problems.append((n, f"grad: {describe(s)}: raised {type(e).__name__}: {str(e)[:160]}"))
            continue
        for i, (e_, g) in enumerate(zip(expected, got)):
            e_ = torch.zeros_like(leaves[i][0]) if e_ is None else e_
            g = torch.zeros_like(e_) if g is None else to_torch(g)
            try:
                torch.testing.assert_close(g, e_.detach(), rtol=1e-5, atol=1e-6, equal_nan=True)
            except AssertionError as err:
                problems.append((n, f"grad of argument {i}: {describe(s)}: "
                                    + " ".join(str(err).split("\n")[2:4])))
    return problems
