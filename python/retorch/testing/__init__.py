"""retorch.testing: torch.testing's assert_close, make_tensor, the deprecated assert_allclose and
the deprecated dtype-list getters, make_non_contiguous, rand and randn."""
import collections.abc
import math
import warnings

from .. import _C
from ._comparison import assert_close
from . import _deprecated
from ._deprecated import *  # noqa: F401,F403  (all_types, get_all_dtypes, make_non_contiguous...)

__all__ = ["assert_close", "make_tensor", "assert_allclose"] + _deprecated.__all__

# assert_allclose's own (looser, pre-1.12) defaults.
_ALLCLOSE_PRECISIONS = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def _allclose_tolerances(actual, expected):
    a = _ALLCLOSE_PRECISIONS.get(str(actual.dtype).rsplit(".", 1)[-1], (0.0, 0.0))
    e = _ALLCLOSE_PRECISIONS.get(str(expected.dtype).rsplit(".", 1)[-1], (0.0, 0.0))
    return max(a[0], e[0]), max(a[1], e[1])


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated (as in torch 1.12+): assert_close with dtype checking off, NaNs equal by default
    and looser default tolerances; warns FutureWarning after a passing comparison."""
    import retorch
    if not isinstance(actual, _C.Tensor):
        actual = retorch.tensor(actual)
    if not isinstance(expected, _C.Tensor):
        expected = retorch.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _allclose_tolerances(actual, expected)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
    warnings.warn("torch.testing.assert_allclose() is deprecated since 1.12 and will be removed "
                  "in 1.14. Use torch.testing.assert_close() instead. For detailed upgrade "
                  "instructions see https://github.com/pytorch/pytorch/issues/61844.",
                  FutureWarning)


def _modify_low_high(low, high, lowest, highest, default_low, default_high, integral):
    low = default_low if low is None else low
    high = default_high if high is None else high
    if low != low or high != high:
        raise ValueError("make_tensor: one of low or high was NaN!")
    if low > high:
        raise ValueError("make_tensor: low must be weakly less than high!")
    low = min(max(low, lowest), highest)
    high = min(max(high, lowest), highest)
    if integral:
        return math.floor(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False):
    """A tensor of shape filled with values drawn uniformly from [low, high) (defaults by dtype:
    bool [0, 2), uint8 [0, 10), other integers [-9, 10), floats [-9, 9]); noncontiguous gives a
    strided view; exclude_zero replaces zeros with 1 (integers) or finfo.tiny (floats)."""
    import retorch
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    integral = (retorch.uint8, retorch.int8, retorch.int16, retorch.int32, retorch.int64)
    floating = (retorch.float16, retorch.bfloat16, retorch.float32, retorch.float64)
    if requires_grad and dtype not in floating:
        raise ValueError("make_tensor: requires_grad must be False for integral dtype")
    if dtype is retorch.bool or dtype == retorch.bool:
        result = retorch.randint(0, 2, shape, device=device, dtype=dtype)
    elif dtype in integral:
        info = retorch.iinfo(dtype)
        default_low = 0 if dtype == retorch.uint8 else -9
        low, high = _modify_low_high(low, high, info.min, info.max, default_low, 10, True)
        result = retorch.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in floating:
        info = retorch.finfo(dtype)
        low, high = _modify_low_high(low, high, info.min, info.max, -9, 9, False)
        rand_val = retorch.rand(shape, device=device, dtype=dtype)
        result = high * rand_val + low * (1 - rand_val)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "torch.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")
    if noncontiguous and result.numel() > 1:
        result = retorch.repeat_interleave(result, 2, dim=-1)
        result = result[..., ::2]
    if exclude_zero:
        tiny = 1 if dtype not in floating else retorch.finfo(dtype).tiny
        result[result == 0] = retorch.tensor(tiny, device=device, dtype=dtype)
    if dtype in floating:
        result.requires_grad_(requires_grad)
    return result
