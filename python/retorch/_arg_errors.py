"""TypeErrors for Python numbers where retorch's Python-level functions expect tensors: a number
reaching code that calls tensor methods on it raised an AttributeError ("'float' object has no
attribute 'dim'"); torch raises TypeError naming the function and the argument."""
import functools
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


def expecting_tensors(fn):
    """fn, with an AttributeError caused by a number argument raised as torch's TypeError."""
    @functools.wraps(fn)
    def checked(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError as e:
            hit = _number_argument(args, kwargs, str(e))
            if hit is None:
                raise
            where, value = hit
            arg = f"(position {where + 1})" if isinstance(where, int) else f"'{where}'"
            raise TypeError(f"{fn.__name__}(): argument {arg} must be Tensor, not "
                            f"{type(value).__name__}") from None
    return checked


def check_namespace(namespace, package, skip=()):
    """Wraps the public Python functions of package defined in namespace (a module's globals);
    skip names the ones whose arguments are numbers by design (factories, seeding)."""
    for name, obj in list(namespace.items()):
        if (isinstance(obj, types.FunctionType) and not name.startswith("_") and
                name not in skip and (obj.__module__ or "").startswith(package)):
            namespace[name] = expecting_tensors(obj)
