"""torch's dtype queries: finfo/iinfo, promote_types, result_type and can_cast. Promotion is read
off the library itself (the dtype add gives), so it cannot drift from the kernels' rules."""
from . import _C

__all__ = ["finfo", "iinfo", "promote_types", "result_type", "can_cast"]


def default_float():
    return _C.get_default_dtype()


def _name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


# bits, eps, max, smallest normal (tiny), resolution (10**-digits) of the floating dtypes.
_FLOAT = {
    "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e38, 1.1754943508222875e-38, 1e-06),
    "float64": (64, 2.220446049250313e-16, 1.7976931348623157e308, 2.2250738585072014e-308,
                1e-15),
    "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
    "bfloat16": (16, 0.0078125, 3.3895313892515355e38, 1.1754943508222875e-38, 0.01),
}
_INT = {"uint8": (8, 0, 255), "int8": (8, -128, 127), "int16": (16, -32768, 32767),
        "int32": (32, -2**31, 2**31 - 1), "int64": (64, -2**63, 2**63 - 1)}


class finfo:
    """Machine limits of a floating dtype (torch.finfo): bits, eps, max, min, tiny,
    smallest_normal, resolution, dtype."""

    def __init__(self, type=None):
        dtype = default_float() if type is None else type
        name = _name(dtype)
        if name not in _FLOAT:
            raise TypeError(f"torch.finfo() requires a floating point input type. Use "
                            f"torch.iinfo to handle '{name}'")
        self.bits, self.eps, self.max, self.tiny, self.resolution = _FLOAT[name]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (torch.iinfo): bits, min, max, dtype."""

    def __init__(self, type):
        name = _name(type)
        if name not in _INT:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo "
                            f"to handle '{name}'")
        self.bits, self.min, self.max = _INT[name]
        self.dtype = name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def promote_types(type1, type2):
    """The dtype both promote to (the dtype of their sum; bool with bool stays bool)."""
    if type1 == _C.bool and type2 == _C.bool:
        return _C.bool
    return (_C.zeros([1], dtype=type1) + _C.zeros([1], dtype=type2)).dtype


def _probe(x):
    """A stand-in with x's promotion category: a tensor keeps its dtype and whether it is 0-dim;
    a Python number stays one."""
    if isinstance(x, _C.Tensor):
        return _C.zeros([] if x.dim() == 0 else [1], dtype=x.dtype)
    return x


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op on these operands (tensors or numbers) returns."""
    a, b = _probe(tensor1), _probe(tensor2)
    if not isinstance(a, _C.Tensor) and not isinstance(b, _C.Tensor):
        from . import tensor
        a = tensor(a)
    if isinstance(a, _C.Tensor) and isinstance(b, _C.Tensor) and a.dtype == _C.bool and \
            b.dtype == _C.bool:
        return _C.bool
    return (a + b).dtype if isinstance(a, _C.Tensor) else (b + a).dtype


_KIND = {"bool": 0, "uint8": 1, "int8": 1, "int16": 1, "int32": 1, "int64": 1,
         "float16": 2, "bfloat16": 2, "float32": 2, "float64": 2}


def can_cast(from_, to):
    """Whether type promotion allows from_ -> to: never to a lower kind (float -> integer,
    non-bool -> bool)."""
    return _KIND[_name(from_)] <= _KIND[_name(to)]
