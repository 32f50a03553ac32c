"""retorch.backends: settings of the compute backends (as torch.backends), and the flag machinery
the cudnn/mkldnn/opt_einsum modules share: module attributes that check what they are given and
refuse plain assignment after disable_global_flags() (torch's test-suite guard)."""
import contextlib

_frozen = False


def disable_global_flags():
    """Makes `retorch.backends.<cudnn|mkldnn>.<flag> = value` an error; flags() still works."""
    global _frozen
    _frozen = True


def flags_frozen():
    return _frozen


@contextlib.contextmanager
def _allow_mutation():
    """The flags() context managers set flags even while they are frozen."""
    global _frozen
    saved, _frozen = _frozen, False
    try:
        yield
    finally:
        _frozen = saved


def _check_bool(setter, value):
    # torch's C++ setters accept only a Python bool, with this message (setter: their name).
    if not isinstance(value, bool):
        raise RuntimeError(f"{setter} expects a bool, but got {_type_name(type(value))}")
    return value


def _type_name(t):
    """CPython's tp_name, which torch's messages print: module-qualified for a C type outside
    builtins (numpy.bool_), the bare name otherwise."""
    if t.__module__ != "builtins" and not t.__flags__ & (1 << 9):  # not Py_TPFLAGS_HEAPTYPE
        return f"{t.__module__}.{t.__qualname__}"
    return t.__name__


def _bool_flag(key, setter):
    """A module attribute (a property of the module's class) backed by the module's _state."""

    def get(mod):
        return mod._state[key]

    def put(mod, value):
        if _frozen:
            raise RuntimeError(f"not allowed to set {mod.__name__} flags after "
                               "disable_global_flags; please use flags() context manager instead")
        mod._state[key] = _check_bool(setter, value)

    return property(get, put)


from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: E402,F401
