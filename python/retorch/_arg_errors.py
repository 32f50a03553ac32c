"""The public Python-level functions as torch's take their arguments: TypeErrors for Python
numbers where they expect tensors (a number reaching code that calls tensor methods on it raised
an AttributeError, "'float' object has no attribute 'dim'"; torch raises TypeError naming the
function and the argument), and out= for those written without one (torch's functions all take
it; python/src/out_args.cpp does the same for the generated bindings)."""
import functools
import inspect
import types

_NUMBERS = (bool, int, float, complex)


def _number_argument(args, kwargs, message):
    """(where, value) of the number argument an AttributeError about a number (the argument,
    or what the code made of it: `x != 0` of a float is a bool) comes from, else None."""
    if not any(f"'{t.__name__}' object" in message for t in _NUMBERS):
        return None
    numbers = [(w, v) for w, v in list(enumerate(args)) + list(kwargs.items())
               if isinstance(v, _NUMBERS)]
    exact = [(w, v) for w, v in numbers if f"'{type(v).__name__}' object" in message]
    return (exact or numbers or [None])[0]


def write_out(result, out, name):
    """result written into out (a tensor, or a sequence of them for several results) as
    torch's out= variants write: no autograd through out=, the result's dtype castable to
    out's, out resized to the result's shape; out (a tuple of them, named like result's) back."""
    from . import _C, _dtypes
    from ._api_extras import _TYPE_NAMES
    from ._api_gaps5 import _resize_out
    if isinstance(result, (tuple, list)):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): expected out to be a tuple of {len(result)} Tensors")
        written = [write_out(r, o, name) for r, o in zip(result, out)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    if not isinstance(out, _C.Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _C.is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if not _dtypes.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {_TYPE_NAMES[result.dtype]} can't be cast to the desired "
                           f"output type {_TYPE_NAMES[out.dtype]}")
    return _resize_out(out, result.shape).copy_(result)


def expecting_tensors(fn, numbers_ok=False):
    """fn, with an AttributeError caused by a number argument raised as torch's TypeError (unless
    its arguments are numbers by design, numbers_ok), and out= when fn has no such parameter."""
    try:
        takes_out = "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_out = True
    if takes_out and numbers_ok:
        return fn

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        out = None if takes_out else kwargs.pop("out", None)
        try:
            result = fn(*args, **kwargs)
        except AttributeError as e:
            hit = None if numbers_ok else _number_argument(args, kwargs, str(e))
            if hit is None:
                raise
            where, value = hit
            arg = f"(position {where + 1})" if isinstance(where, int) else f"'{where}'"
            raise TypeError(f"{fn.__name__}(): argument {arg} must be Tensor, not "
                            f"{type(value).__name__}") from None
        return result if out is None else write_out(result, out, fn.__name__)
    return checked


def check_namespace(namespace, package, skip=()):
    """Wraps the public Python functions of package defined in namespace (a module's globals);
    skip names the ones whose arguments are numbers by design (factories, seeding), which only
    gain out=."""
    for name, obj in list(namespace.items()):
        if (isinstance(obj, types.FunctionType) and not name.startswith("_") and
                (obj.__module__ or "").startswith(package)):
            namespace[name] = expecting_tensors(obj, numbers_ok=name in skip)
