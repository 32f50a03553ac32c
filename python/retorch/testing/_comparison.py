"""assert_close: torch.testing's pairwise comparison of (nested) tensors, scalars and containers."""
import cmath
import collections.abc
import contextlib

import numpy as np

from .. import _C

# {dtype name: (rtol, atol)}; other dtypes (integers, bool) compare exactly.
_DTYPE_PRECISIONS = {
    "float16": (0.001, 1e-5),
    "bfloat16": (0.016, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (0.001, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
# Python numbers take the tolerances of the dtype torch gives them.
_NUMBER_DTYPE = {int: "int64", float: "float64", complex: "complex128"}


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


class ErrorMeta(Exception):
    """An error to raise at the user, with the path (id) of the item it occurred for."""

    def __init__(self, type, msg, *, id=()):
        super().__init__("internal comparison error; raise ErrorMeta().to_error() instead")
        self.type = type
        self.msg = msg
        self.id = id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              f"{''.join(str([item]) for item in self.id)}")
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class UnsupportedInputs(Exception):
    """A pair type cannot handle these inputs: the next one is tried."""


def default_tolerances(*inputs):
    """The loosest (rtol, atol) of the inputs' dtypes (tensors or dtypes)."""
    names = []
    for x in inputs:
        if isinstance(x, _C.Tensor):
            names.append(_dtype_name(x.dtype))
        elif isinstance(x, _C.dtype):
            names.append(_dtype_name(x))
        elif isinstance(x, str):
            names.append(x)
        else:
            raise TypeError(f"Expected a torch.Tensor or a torch.dtype, but got {type(x)} "
                            "instead.")
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(n, (0.0, 0.0)) for n in names])
    return max(rtols), max(atols)


def get_tolerances(*inputs, rtol, atol, id=()):
    if (rtol is None) ^ (atol is None):
        raise ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                        f"but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*inputs)


def _make_mismatch_msg(*, default_identifier, identifier=None, extra=None, abs_diff,
                       abs_diff_idx=None, atol, rel_diff, rel_diff_idx=None, rtol):
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        if idx is None:
            msg = f"{kind.title()} difference: {diff}"
        else:
            msg = f"Greatest {kind} difference: {diff} at index {idx}"
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    if identifier is None:
        identifier = default_identifier
    elif callable(identifier):
        identifier = identifier(default_identifier)
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_diff_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_diff_idx, rtol)
    return msg.strip()


def make_scalar_mismatch_msg(actual, expected, *, rtol, atol, identifier=None):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _make_mismatch_msg(default_identifier="Scalars", identifier=identifier,
                              abs_diff=abs_diff, atol=atol, rel_diff=rel_diff, rtol=rtol)


def _unravel(flat_index, shape):
    index = []
    for size in shape[::-1]:
        flat_index, mod = divmod(flat_index, size)
        index.append(mod)
    return tuple(index[::-1])


def make_tensor_mismatch_msg(actual, expected, mismatches, *, rtol, atol, identifier=None):
    """actual/expected: numpy arrays in the comparison dtype; mismatches: their bool mask."""
    total = int(mismatches.sum())
    numel = mismatches.size
    extra = f"Mismatched elements: {total} / {numel} ({total / numel:.1%})"
    a, b = actual.reshape(-1), expected.reshape(-1)
    matches = ~mismatches.reshape(-1)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - b)
        abs_diff[matches] = 0
        rel_diff = abs_diff / np.abs(b)
    rel_diff[matches] = 0
    # argmax returns the first NaN, as torch.max does.
    abs_idx, rel_idx = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    return _make_mismatch_msg(
        default_identifier="Tensor-likes", identifier=identifier, extra=extra,
        abs_diff=abs_diff[abs_idx].item(), abs_diff_idx=_unravel(abs_idx, mismatches.shape),
        atol=atol, rel_diff=rel_diff[rel_idx].item(),
        rel_diff_idx=_unravel(rel_idx, mismatches.shape), rtol=rtol)


class Pair:
    """Compares one actual/expected leaf; the constructor raises UnsupportedInputs to pass."""

    def __init__(self, actual, expected, *, id=(), **unknown_parameters):
        self.actual = actual
        self.expected = expected
        self.id = id

    @staticmethod
    def _check_inputs_isinstance(*inputs, cls):
        if not all(isinstance(x, cls) for x in inputs):
            raise UnsupportedInputs()

    def _make_error_meta(self, type, msg):
        return ErrorMeta(type, msg, id=self.id)

    def compare(self):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(id={self.id}, actual={self.actual}, " \
               f"expected={self.expected})"


class NonePair(Pair):
    def __init__(self, actual, expected, **other):
        if not (actual is None or expected is None):
            raise UnsupportedInputs()
        super().__init__(actual, expected, **other)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            raise self._make_error_meta(AssertionError,
                                        f"None mismatch: {self.actual} is not {self.expected}")


class BooleanPair(Pair):
    def __init__(self, actual, expected, *, id, **other):
        self._check_inputs_isinstance(actual, expected, cls=(bool, np.bool_))
        actual, expected = (bool(x) for x in (actual, expected))
        super().__init__(actual, expected, id=id, **other)

    def compare(self):
        if self.actual is not self.expected:
            raise self._make_error_meta(
                AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


class NumberPair(Pair):
    def __init__(self, actual, expected, *, id=(), rtol=None, atol=None, equal_nan=False,
                 check_dtype=False, **other):
        self._check_inputs_isinstance(actual, expected, cls=(int, float, complex, np.number))
        actual, expected = (x.item() if isinstance(x, np.number) else x
                            for x in (actual, expected))
        super().__init__(actual, expected, id=id, **other)
        self.rtol, self.atol = get_tolerances(
            *[_NUMBER_DTYPE[type(x)] for x in (actual, expected)], rtol=rtol, atol=atol, id=id)
        self.equal_nan = equal_nan
        self.check_dtype = check_dtype

    def compare(self):
        if self.check_dtype and type(self.actual) is not type(self.expected):
            raise self._make_error_meta(
                AssertionError,
                f"The (d)types do not match: {type(self.actual)} != {type(self.expected)}.")
        if self.actual == self.expected:
            return
        if self.equal_nan and cmath.isnan(self.actual) and cmath.isnan(self.expected):
            return
        abs_diff = abs(self.actual - self.expected)
        tolerance = self.atol + self.rtol * abs(self.expected)
        if cmath.isfinite(abs_diff) and abs_diff <= tolerance:
            return
        raise self._make_error_meta(AssertionError, make_scalar_mismatch_msg(
            self.actual, self.expected, rtol=self.rtol, atol=self.atol))


def _size(shape):
    return f"torch.Size({list(shape)})"  # how torch prints a shape in these messages


class TensorLikePair(Pair):
    def __init__(self, actual, expected, *, id=(), allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, **other):
        directly_related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not directly_related:
            raise UnsupportedInputs()
        if not allow_subclasses and type(actual) is not type(expected):
            raise UnsupportedInputs()
        actual, expected = (self._to_tensor(x) for x in (actual, expected))
        super().__init__(actual, expected, id=id, **other)
        self.rtol, self.atol = get_tolerances(actual, expected, rtol=rtol, atol=atol, id=self.id)
        self.equal_nan = equal_nan
        self.check_device = check_device
        self.check_dtype = check_dtype
        self.check_layout = check_layout
        self.check_stride = check_stride

    @staticmethod
    def _to_tensor(x):
        if isinstance(x, _C.Tensor):
            return x
        try:
            import retorch
            return retorch.as_tensor(x)
        except Exception:
            raise UnsupportedInputs()

    def compare(self):
        actual, expected = self.actual, self.expected
        self._compare_attributes(actual, expected)
        if "meta" in (actual.device.type, expected.device.type):
            return
        self._compare_values(*self._equalize_attributes(actual, expected))

    def _compare_attributes(self, actual, expected):
        def mismatch(name, a, e):
            raise self._make_error_meta(
                AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.")
        if tuple(actual.shape) != tuple(expected.shape):
            mismatch("shape", _size(actual.shape), _size(expected.shape))
        if actual.layout != expected.layout:
            if self.check_layout:
                mismatch("layout", actual.layout, expected.layout)
        elif self.check_stride and actual.stride() != expected.stride():
            mismatch("stride()", actual.stride(), expected.stride())
        if self.check_device and actual.device != expected.device:
            mismatch("device", actual.device, expected.device)
        if self.check_dtype and actual.dtype != expected.dtype:
            mismatch("dtype", actual.dtype, expected.dtype)

    @staticmethod
    def _equalize_attributes(actual, expected):
        if actual.device != expected.device:
            actual, expected = actual.cpu(), expected.cpu()
        if actual.dtype != expected.dtype:
            import retorch
            dtype = retorch.promote_types(actual.dtype, expected.dtype)
            actual, expected = actual.to(dtype), expected.to(dtype)
        return actual, expected

    def _compare_values(self, actual, expected):
        import retorch
        # Compared in the widest dtype of their kind, as torch does (bool counts as integral).
        wide = retorch.float64 if actual.is_floating_point() else retorch.int64
        a, b = (t.detach().cpu().to(wide).numpy() for t in (actual, expected))
        if wide is retorch.int64 and self.rtol == 0 and self.atol == 0:
            matches = a == b  # exact, even past 2**53
        else:
            with np.errstate(all="ignore"):
                matches = np.isclose(a, b, rtol=self.rtol, atol=self.atol,
                                     equal_nan=self.equal_nan)
        if matches.all():
            return
        if a.shape == ():
            msg = make_scalar_mismatch_msg(a.item(), b.item(), rtol=self.rtol, atol=self.atol)
        else:
            msg = make_tensor_mismatch_msg(a, b, ~matches, rtol=self.rtol, atol=self.atol)
        raise self._make_error_meta(AssertionError, msg)


def originate_pairs(actual, expected, *, pair_types,
                    sequence_types=(collections.abc.Sequence,),
                    mapping_types=(collections.abc.Mapping,), id=(), **options):
    """The leaf pairs of actual and expected, recursing through sequences and mappings (strings
    are leaves)."""
    if (isinstance(actual, sequence_types) and not isinstance(actual, str)
            and isinstance(expected, sequence_types) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise ErrorMeta(AssertionError, "The length of the sequences mismatch: "
                            f"{len(actual)} != {len(expected)}", id=id)
        pairs = []
        for i in range(len(actual)):
            pairs.extend(originate_pairs(actual[i], expected[i], pair_types=pair_types,
                                         sequence_types=sequence_types,
                                         mapping_types=mapping_types, id=(*id, i), **options))
        return pairs
    if isinstance(actual, mapping_types) and isinstance(expected, mapping_types):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise ErrorMeta(AssertionError, (
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}"),
                id=id)
        keys = actual_keys
        with contextlib.suppress(Exception):  # deterministic order where the keys sort
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(originate_pairs(actual[key], expected[key], pair_types=pair_types,
                                         sequence_types=sequence_types,
                                         mapping_types=mapping_types, id=(*id, key), **options))
        return pairs
    for pair_type in pair_types:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except UnsupportedInputs:
            continue
        except ErrorMeta:
            raise
        except Exception as error:
            raise RuntimeError(
                f"Originating a {pair_type.__name__}() at item "
                f"{''.join(str([item]) for item in id)} with\n\n{type(actual).__name__}(): "
                f"{actual}\n\nand\n\n{type(expected).__name__}(): {expected}\n\nresulted in the "
                "unexpected exception above.") from error
    raise ErrorMeta(TypeError, "No comparison pair was able to handle inputs of type "
                    f"{type(actual)} and {type(expected)}.", id=id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Asserts actual and expected (tensors, tensor-likes, Python scalars, or sequences/mappings
    of them) are close: |actual - expected| <= atol + rtol * |expected| elementwise, with the same
    shape, device, dtype and layout (each check optional). Default tolerances come from the
    dtype: float16 1e-3/1e-5, bfloat16 1.6e-2/1e-5, float32 1.3e-6/1e-5, float64 1e-7/1e-7,
    integers and bool exact. msg (a str, or a callable of the generated message) replaces the
    message."""
    __tracebackhide__ = True
    try:
        pairs = originate_pairs(
            actual, expected, pair_types=(NonePair, BooleanPair, NumberPair, TensorLikePair),
            allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
            check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
            check_stride=check_stride)
    except ErrorMeta as error_meta:
        raise error_meta.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except ErrorMeta as error_meta:
            raise error_meta.to_error(msg) from None
