"""PyTorch oracle helpers: paired torch/retorch inputs, layouts, torch calls, tolerance checks."""
import os
import re

import numpy as np
import pytest
import torch
import yaml

import retorch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS_YAML = os.path.join(ROOT, "retorch", "ops", "ops.yaml")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
DTYPE_SETS = {
    "all": DTYPES,
    "numeric": DTYPES[1:],
    "signed": [d for d in DTYPES if d not in ("bool", "uint8")],
    "float": FLOATS,
    "integral": DTYPES[:6],
    "int": DTYPES[1:6],
}

# (rtol, atol) like torch.testing.assert_close; ints and bool compare exactly.
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}


def load_ops():
    """The ops.yaml entries, each with 'name' (full name like add.Tensor), 'base' and 'overload'."""
    import glob
    entries = []
    for path in [OPS_YAML] + sorted(glob.glob(os.path.join(os.path.dirname(OPS_YAML), "ops_*.yaml"))):
        with open(path) as f:
            entries += yaml.safe_load(f) or []
    for e in entries:
        head = e["func"].split("(", 1)[0]
        e["name"] = head
        e["base"], _, e["overload"] = head.partition(".")
        e["variants"] = [v.strip() for v in e.get("variants", "function").split(",")]
        e.setdefault("test", {})
    return entries


def dtype_name(dt):
    """'float32' for torch.float32 or retorch.float32."""
    return str(dt).split(".")[-1]


# ---------------------------------------------------------------- values

def round_to(arr, dtype):
    """Rounds float values to what dtype can hold, so both libraries see the same numbers."""
    if dtype == "float16":
        return arr.astype(np.float16)
    if dtype == "bfloat16":
        t = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32)).to(torch.bfloat16)
        return t.to(torch.float32).numpy()
    if dtype in ("float32", "float64"):
        return arr.astype(dtype)
    return arr


def make_values(rng, shape, dtype, domain=None, distinct=False, special=False):
    """Random numpy values for dtype (float32 storage for bfloat16) drawn from a test domain."""
    shape = tuple(shape)
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        return rng.random(shape) < 0.5
    is_float = dtype in FLOATS
    if distinct:
        vals = rng.permutation(n).astype(np.float64)
        if dtype != "uint8":
            vals -= n // 2
        if is_float:
            vals = vals * 0.5
        arr = vals.reshape(shape)
    elif is_float:
        if domain == "positive":
            arr = rng.uniform(0.5, 2.5, shape)
        elif domain == "unit":
            arr = rng.uniform(-0.9, 0.9, shape)
        elif domain == "probability":
            arr = rng.uniform(0.05, 0.95, shape)
        elif domain == "small":
            arr = rng.uniform(-1.0, 1.0, shape)
        elif domain == "nonzero":
            arr = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        else:
            arr = rng.uniform(-2.0, 2.0, shape)
        if special and n >= 4:
            flat = arr.reshape(-1)
            picks = rng.permutation(n)[:4]
            flat[picks] = [np.nan, np.inf, -np.inf, -0.0]
            arr = flat.reshape(shape)
    else:
        lo = 0 if dtype == "uint8" else -5
        if domain == "positive":
            arr = rng.integers(1, 6, shape)
        elif domain == "nonzero":
            arr = rng.integers(1, 6, shape)
            if dtype != "uint8":
                arr = arr * rng.choice([-1, 1], shape)
        else:
            arr = rng.integers(lo, 6, shape)
    if dtype == "bfloat16":
        return round_to(np.asarray(arr, dtype=np.float32), "bfloat16")
    return np.asarray(arr).astype(dtype)


# ---------------------------------------------------------------- paired tensors

class Pair:
    """The same values as a torch tensor (.t) and a retorch tensor (.r), with the same layout."""

    def __init__(self, t, r, values):
        self.t, self.r, self.values = t, r, values


def _base_pair(base, dtype):
    base = np.array(base, order="C", copy=True)  # fresh C strides, also for size-1 dims
    t = torch.from_numpy(base).clone()
    r = retorch.from_numpy(base).clone()
    if dtype == "bfloat16":
        t, r = t.to(torch.bfloat16), r.to(retorch.bfloat16)
    return t, r


LAYOUTS = ("contig", "transposed", "sliced", "expanded")


def pair_from_values(values, dtype, layout="contig"):
    """Builds torch/retorch tensors holding `values`; layout picks strides (see LAYOUTS)."""
    values = np.asarray(values)
    if layout == "transposed" and values.ndim >= 2:
        t, r = _base_pair(np.swapaxes(values, -1, -2), dtype)
        return Pair(t.transpose(-1, -2), r.transpose(-1, -2), values)
    if layout in ("sliced", "transposed") and values.ndim >= 1:
        base = np.zeros(values.shape[:-1] + (values.shape[-1] * 2 + 1,), values.dtype)
        base[..., 1::2] = values
        t, r = _base_pair(base, dtype)
        return Pair(t[..., 1::2], r[..., 1::2], values)
    if layout == "expanded" and values.ndim >= 1 and values.shape[0] > 1:
        row = values[:1]
        values = np.broadcast_to(row, values.shape)
        t, r = _base_pair(row, dtype)
        return Pair(t.expand(values.shape), r.expand(values.shape), values)
    t, r = _base_pair(values, dtype)
    return Pair(t, r, values)


def make_pair(rng, shape, dtype, layout="contig", domain=None, distinct=False, special=False):
    vals = make_values(rng, shape, dtype, domain, distinct, special)
    return pair_from_values(vals, dtype, layout)


# ---------------------------------------------------------------- calling torch

HALF_MSG = re.compile(r"not implemented for '(Half|BFloat16)'")


def _map(obj, fn):
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return fn(obj)


def call_torch(fn, args, kwargs=None, upcast=False):
    """Calls a torch function. Where torch 1.13 lacks a Half/BFloat16 CPU kernel, the reference
    is computed in float32 and cast back. upcast=True computes every floating tensor in float64
    and returns float64 results (an exact-math reference; see assert_matches). In-place and
    out= arguments are written back either way."""
    kwargs = kwargs or {}
    if not upcast:
        try:
            return fn(*args, **kwargs)
        except RuntimeError as e:
            if not HALF_MSG.search(str(e)):
                raise
    widen = (torch.float16, torch.bfloat16, torch.float32) if upcast else \
        (torch.float16, torch.bfloat16)
    wide = torch.float64 if upcast else torch.float32
    low = set()
    copies = []

    def up(x):
        if isinstance(x, torch.Tensor) and x.dtype in widen:
            low.add(x.dtype)
            c = x.detach().to(wide)
            copies.append((x, c))
            return c
        return x

    out = fn(*_map(args, up), **_map(kwargs, up))
    back = low.pop() if len(low) == 1 and not upcast else None

    def down(x):
        for orig, c in copies:
            if x is c:
                with torch.no_grad():
                    if orig.shape != c.shape:
                        orig.resize_(c.shape)
                    orig.copy_(c)
                return orig
        if back is not None and isinstance(x, torch.Tensor) and x.dtype == wide:
            return x.to(back)
        return x

    return _map(out, down)


def outcome(fn, *args, **kwargs):
    """(result, None) or (None, exception)."""
    try:
        return fn(*args, **kwargs), None
    except (RuntimeError, IndexError, TypeError, ValueError, NotImplementedError) as e:
        return None, e


def cast_like(x, t):
    """x (a float64 reference) cast to the dtypes of torch's own result t."""
    if isinstance(t, (tuple, list)):
        return type(t)(cast_like(a, b) for a, b in zip(x, t))
    return x.to(t.dtype) if isinstance(t, torch.Tensor) and isinstance(x, torch.Tensor) else x


def _has_float(t):
    if isinstance(t, (tuple, list)):
        return any(_has_float(x) for x in t)
    return isinstance(t, torch.Tensor) and t.is_floating_point()


def assert_matches(r, t, alt=None, what="result"):
    """assert_close against torch. For floating results, torch computed in float64 and rounded
    once to its result dtype (alt()) is accepted too: torch's own kernels round intermediates
    (half mean = half(sum) / n, float32 sums in float32) and may be less exact than retorch."""
    try:
        assert_close(r, t, what)
    except (AssertionError, pytest.fail.Exception):
        if alt is None or not _has_float(t):
            raise
        assert_close(r, cast_like(alt(), t), what + " (vs torch computed in float64)")


def check_same_error(t_err, r_err, what=""):
    """retorch raises iff torch raises, with the same exception class."""
    if t_err is None and r_err is None:
        return False
    if t_err is None:
        pytest.fail(f"{what}: retorch raised {type(r_err).__name__}: {r_err} but torch succeeded")
    if r_err is None:
        pytest.fail(f"{what}: torch raised {type(t_err).__name__}: {t_err} but retorch succeeded")
    assert type(r_err) is type(t_err), (
        f"{what}: torch raised {type(t_err).__name__}({t_err}), "
        f"retorch raised {type(r_err).__name__}({r_err})")
    return True


# ---------------------------------------------------------------- comparison

def _as_numpy(x):
    """float64/int64/bool numpy array of a torch or retorch tensor."""
    if isinstance(x, torch.Tensor):
        x = x.detach()
        if x.dtype == torch.bfloat16:
            x = x.to(torch.float32)
        return x.numpy()
    x = x.detach()
    if dtype_name(x.dtype) == "bfloat16":
        x = x.to(retorch.float32)
    return x.numpy()


def assert_close(r, t, what="result", rtol=None, atol=None, check_dtype=True):
    """Checks a retorch result against the torch one: type, dtype, shape, then values
    (exact for ints/bool, torch.testing tolerances for floats, NaN equal to NaN)."""
    if isinstance(t, (tuple, list)):
        assert isinstance(r, (tuple, list)), f"{what}: expected a sequence, got {type(r).__name__}"
        assert len(r) == len(t), f"{what}: {len(r)} outputs, torch has {len(t)}"
        for i, (ri, ti) in enumerate(zip(r, t)):
            assert_close(ri, ti, f"{what}[{i}]", rtol, atol, check_dtype)
        return
    if not isinstance(t, torch.Tensor):
        assert r == t, f"{what}: {r!r} != torch {t!r}"
        return
    assert isinstance(r, retorch.Tensor), f"{what}: expected a Tensor, got {type(r).__name__}"
    tname, rname = dtype_name(t.dtype), dtype_name(r.dtype)
    if check_dtype:
        assert rname == tname, f"{what}: dtype {rname}, torch gives {tname}"
    assert tuple(r.shape) == tuple(t.shape), \
        f"{what}: shape {tuple(r.shape)}, torch {tuple(t.shape)}"
    a, b = _as_numpy(r), _as_numpy(t)
    if tname not in TOLERANCES:
        bad = a != b
    else:
        drt, dat = TOLERANCES[tname]  # explicit tolerances only ever loosen the defaults
        rt_ = drt if rtol is None else max(rtol, drt)
        at_ = dat if atol is None else max(atol, dat)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(a64 - b64) <= at_ + rt_ * np.abs(b64)
        close |= (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
        bad = ~close
    if np.any(bad):
        idx = np.argwhere(bad)[:5]
        pts = ", ".join(f"{tuple(i)}: {a[tuple(i)]!r} vs {b[tuple(i)]!r}" for i in idx)
        pytest.fail(f"{what}: {int(np.sum(bad))}/{bad.size} values differ ({rname}); "
                    f"retorch vs torch at {pts}")
