"""torch.testing's deprecated helpers (1.12-1.13): the dtype-list getters, get_all_device_types,
make_non_contiguous, rand and randn; each warns FutureWarning as torch's do.

retorch has no complex (and no quantized) dtypes, so the getters leave them out: complex_types()
and get_all_complex_dtypes() are empty, double_types() is (float64,), floating_and_complex_types()
equals floating_types(), and get_all_dtypes(include_complex=True) lists no complex dtype."""
import functools
import random
import warnings

from .. import _C

__all__ = ["rand", "randn", "get_all_device_types", "make_non_contiguous", "all_types",
           "all_types_and", "all_types_and_complex", "all_types_and_complex_and",
           "all_types_and_half", "complex_types", "empty_types", "floating_and_complex_types",
           "floating_and_complex_types_and", "floating_types", "floating_types_and",
           "double_types", "floating_types_and_half", "get_all_complex_dtypes", "get_all_dtypes",
           "get_all_fp_dtypes", "get_all_int_dtypes", "get_all_math_dtypes", "integral_types",
           "integral_types_and"]


def _deprecated(instructions):
    """Wraps fn to warn, after it returns, that torch.testing.<name>() is deprecated."""
    def outer(fn):
        head = (f"torch.testing.{fn.__name__}() is deprecated since 1.12 and will be removed in "
                "1.14. ")

        @functools.wraps(fn)
        def inner(*args, **kwargs):
            value = fn(*args, **kwargs)
            tail = instructions if isinstance(instructions, str) else \
                f"This call can be replaced with {value}."
            warnings.warn((head + tail).strip(), FutureWarning, stacklevel=2)
            return value
        return inner
    return outer


_getter = _deprecated(None)


def _rand(*args, **kwargs):
    from .. import rand
    return rand(*args, **kwargs)


def _randn(*args, **kwargs):
    from .. import randn
    return randn(*args, **kwargs)


_rand.__name__, _randn.__name__ = "rand", "randn"
rand = _deprecated("Use torch.rand() instead.")(_rand)
randn = _deprecated("Use torch.randn() instead.")(_randn)


class _dispatch_dtypes(tuple):
    """A tuple of dtypes (one of torch's dispatch-macro lists); + keeps the type."""

    def __add__(self, other):
        assert isinstance(other, tuple)
        return _dispatch_dtypes(tuple.__add__(self, other))


def _validate_dtypes(*dtypes):
    for dtype in dtypes:
        assert isinstance(dtype, _C.dtype)
    return dtypes


_EMPTY = _dispatch_dtypes(())
_FLOATING = _dispatch_dtypes((_C.float32, _C.float64))
_INTEGRAL = _dispatch_dtypes((_C.uint8, _C.int8, _C.int16, _C.int32, _C.int64))
_COMPLEX = _EMPTY  # torch: (complex64, complex128); retorch has no complex dtypes
_ALL = _FLOATING + _INTEGRAL


@_getter
def empty_types():
    return _EMPTY


@_getter
def floating_types():
    return _FLOATING


@_getter
def floating_types_and_half():
    return _FLOATING + (_C.float16,)


@_getter
def floating_types_and(*dtypes):
    return _FLOATING + _validate_dtypes(*dtypes)


@_getter
def floating_and_complex_types():
    return _FLOATING + _COMPLEX


@_getter
def floating_and_complex_types_and(*dtypes):
    return _FLOATING + _COMPLEX + _validate_dtypes(*dtypes)


@_getter
def double_types():
    return _dispatch_dtypes((_C.float64,))  # torch adds complex128


@_getter
def integral_types():
    return _INTEGRAL


@_getter
def integral_types_and(*dtypes):
    return _INTEGRAL + _validate_dtypes(*dtypes)


@_getter
def all_types():
    return _ALL


@_getter
def all_types_and(*dtypes):
    return _ALL + _validate_dtypes(*dtypes)


@_getter
def complex_types():
    return _COMPLEX


@_getter
def all_types_and_complex():
    return _ALL + _COMPLEX


@_getter
def all_types_and_complex_and(*dtypes):
    return _ALL + _COMPLEX + _validate_dtypes(*dtypes)


@_getter
def all_types_and_half():
    return _ALL + (_C.float16,)


def _int_dtypes():
    return [_C.uint8, _C.int8, _C.int16, _C.int32, _C.int64]


def _fp_dtypes(include_half=True, include_bfloat16=True):
    dtypes = [_C.float32, _C.float64]
    if include_half:
        dtypes.append(_C.float16)
    if include_bfloat16:
        dtypes.append(_C.bfloat16)
    return dtypes


@_getter
def get_all_int_dtypes():
    return _int_dtypes()


@_getter
def get_all_fp_dtypes(include_half=True, include_bfloat16=True):
    return _fp_dtypes(include_half, include_bfloat16)


@_getter
def get_all_complex_dtypes(include_complex32=False):
    return []  # torch: complex64, complex128 (and complex32); none exist here


@_getter
def get_all_dtypes(include_half=True, include_bfloat16=True, include_bool=True,
                   include_complex=True, include_complex32=False, include_qint=False):
    """Integer, then floating, then bool dtypes; complex and quantized ones do not exist here, so
    include_complex, include_complex32 and include_qint add nothing."""
    dtypes = _int_dtypes() + _fp_dtypes(include_half, include_bfloat16)
    if include_bool:
        dtypes.append(_C.bool)
    return dtypes


@_getter
def get_all_math_dtypes(device):
    return _int_dtypes() + _fp_dtypes(include_half=device.startswith("cuda"),
                                      include_bfloat16=False)


@_getter
def get_all_device_types():
    from .. import cuda
    return ["cpu"] if not cuda.is_available() else ["cpu", "cuda"]


@_deprecated(
    "Depending on the use case there a different replacement options:\n\n"
    "- If you are using `make_non_contiguous` in combination with a creation function to create "
    "a noncontiguous tensor with random values, use `torch.testing.make_tensor(..., "
    "noncontiguous=True)` instead.\n"
    "- If you are using `make_non_contiguous` with a specific tensor, you can replace this call "
    "with `torch.repeat_interleave(input, 2, dim=-1)[..., ::2]`.\n"
    "- If you are using `make_non_contiguous` in the PyTorch test suite, use "
    "`torch.testing._internal.common_utils.noncontiguous_like` instead.")
def make_non_contiguous(tensor):
    """A non-contiguous copy of tensor (a clone when it has at most one element): the values are
    written into a window of a larger buffer with an extra trailing dim, chosen with Python's
    random module (the same draws as torch's, so a seeded run gives the same strides)."""
    if tensor.numel() <= 1:
        return tensor.clone()
    osize = list(tensor.shape)
    for _ in range(2):  # inflate a couple of dims
        dim = random.randint(0, len(osize) - 1)
        osize[dim] += random.randint(4, 15)
    # Narrowing only dim 0 keeps a tensor contiguous, so also add a trailing dim and pick from it.
    buf = _C.empty(osize + [random.randint(2, 3)], dtype=tensor.dtype, device=tensor.device)
    buf = buf.select(buf.dim() - 1, random.randint(0, 1))
    for i in range(len(osize)):
        if buf.shape[i] != tensor.shape[i]:
            start = random.randint(1, buf.shape[i] - tensor.shape[i])
            buf = buf.narrow(i, start, tensor.shape[i])
    buf.copy_(tensor)
    return buf.data  # hides the view relation, as torch's does
