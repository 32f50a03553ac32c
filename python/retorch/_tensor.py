"""Tensor conveniences torch defines in Python: dtype shorthands, new_* factories, aliases, T/mT,
and the operators pybind11 does not derive (unary +, reflected @, in-place **, %, //)."""
from . import _C

# The legacy type names (x.type(), retorch.FloatTensor, ...).
_TYPE_NAMES = {
    _C.float32: "FloatTensor", _C.float64: "DoubleTensor", _C.float16: "HalfTensor",
    _C.bfloat16: "BFloat16Tensor", _C.int64: "LongTensor", _C.int32: "IntTensor",
    _C.int16: "ShortTensor", _C.int8: "CharTensor", _C.uint8: "ByteTensor",
    _C.bool: "BoolTensor",
}

# Aliases torch.Tensor has for methods retorch already generates.
_ALIASES = {
    "absolute": "abs", "absolute_": "abs_", "arccos": "acos", "arccos_": "acos_",
    "arcsin": "asin", "arcsin_": "asin_", "arctan": "atan", "arctan_": "atan_",
    "arctan2": "atan2", "arctan2_": "atan2_", "clip": "clamp", "clip_": "clamp_",
    "multiply": "mul", "multiply_": "mul_", "subtract": "sub", "subtract_": "sub_",
    "divide": "div", "divide_": "div_", "true_divide": "div", "true_divide_": "div_",
    "greater": "gt", "greater_": "gt_", "greater_equal": "ge", "greater_equal_": "ge_",
    "less": "lt", "less_": "lt_", "less_equal": "le", "less_equal_": "le_",
    "not_equal": "ne", "not_equal_": "ne_", "negative": "neg", "negative_": "neg_",
    "swapaxes": "transpose", "swapdims": "transpose", "fix": "trunc", "fix_": "trunc_",
    "sgn": "sign", "sgn_": "sign_", "ger": "outer",
    # torch's Python 2 operator names, still on torch.Tensor
    "__div__": "__truediv__", "__rdiv__": "__rtruediv__", "__idiv__": "__itruediv__",
    "__nonzero__": "__bool__", "__long__": "__int__",
}


def _dtype_of(name):
    return {"double": _C.float64, "float": _C.float32, "half": _C.float16,
            "bfloat16": _C.bfloat16, "int": _C.int32, "long": _C.int64, "short": _C.int16,
            "char": _C.int8, "byte": _C.uint8, "bool": _C.bool}[name]


def _conversion(name):
    dt = _dtype_of(name)

    preserve = _C.preserve_format

    def convert(self, memory_format=preserve):
        if memory_format is preserve or memory_format == preserve:
            return self if self.dtype is dt else self.to(dt)
        return self.to(dt, memory_format=memory_format)
    convert.__name__ = name
    convert.__doc__ = f"self.to({dt})"
    return convert


def _size_args(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from . import tensor
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def movedim(self, source, destination):
    from ._api_legacy import _wrap_dim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    n = self.dim()
    # torch's checks, in its order: counts, ranges, repeats
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    wrapped_src = [_wrap_dim(d, n) for d in src]
    wrapped_dst = [_wrap_dim(d, n) for d in dst]
    if len(set(wrapped_src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(wrapped_dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    if n == 0:
        return self.view_as(self)
    order = [None] * n
    for s, d in zip(wrapped_src, wrapped_dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in wrapped_src)
    return self.permute([o if o is not None else next(rest) for o in order])


def fliplr(self):
    if self.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return self.flip([1])


def flipud(self):
    if self.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return self.flip([0])


def unflatten(self, dim, sizes):
    d = dim % self.dim()
    shape = list(self.shape)
    return self.reshape(shape[:d] + list(sizes) + shape[d + 1:])


def _swap_in(self, make_view, op, instead="the out-of-place form"):
    """self takes the geometry (and memory) of make_view()'s result in place, through
    Tensor.data. Autograd does not record the swap, so a tensor that requires grad is refused
    rather than left with a backward of the old shape; the view is made with grad off."""
    if self.requires_grad and _C.is_grad_enabled():
        if self.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        raise RuntimeError(f"{op}: retorch does not record in-place geometry changes for "
                           f"autograd; use {instead} here")
    prev = _C.is_grad_enabled()
    _C._set_grad_enabled(False)
    try:
        self.data = make_view()
    finally:
        _C._set_grad_enabled(prev)
    return self


def _inplace_view(view):
    """t_(), transpose_(), squeeze_(), unsqueeze_(), as_strided_(): swap in the view's geometry
    in place (_swap_in)."""
    def fn(self, *args, **kwargs):
        return _swap_in(self, lambda: getattr(self, view)(*args, **kwargs), view + "_",
                        f"the out-of-place {view}()")
    fn.__name__ = view + "_"
    return fn


def _contains(self, element):
    if isinstance(element, (_C.Tensor, int, float, bool)):
        return bool((self == element).any())
    raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                       f"{type(element)}.")


def _iter(self):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


def _rebuild_tensor(array, dtype, device, requires_grad, cls=None):
    """Unpickles a tensor (Tensor.__reduce_ex__): its values, dtype, device, requires_grad,
    and its class when it is a subclass such as nn.Parameter (rebuilt as cls(t, requires_grad))."""
    t = _C.from_numpy(array)
    want = getattr(_C, dtype)
    if t.dtype != want:
        t = t.to(want)
    if device != "cpu":
        t = t.to(device)
    if cls is not None:
        return cls(t, requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_ex(self, protocol):
    """pickle (and copy.copy) of a tensor, as torch pickles tensors: values, dtype, device,
    requires_grad and class (an nn.Parameter comes back as one; .grad is not kept). bfloat16
    travels as float32, which holds every bfloat16 exactly. The values are numpy's, so
    copy.copy shares them with the original like torch's does, while pickling copies them."""
    t = self.detach()
    dtype = str(t.dtype).rsplit(".", 1)[-1]
    if t.device.type != "cpu":
        t = t.cpu()
    array = (t.float() if dtype == "bfloat16" else t).numpy()
    cls = type(self) if type(self) is not _C.Tensor else None
    return (_rebuild_tensor, (array, dtype, str(self.device), self.requires_grad, cls))


def install(Tensor):
    for name in ("double", "float", "half", "bfloat16", "int", "long", "short", "char", "byte",
                 "bool"):
        setattr(Tensor, name, _conversion(name))
    for alias, target in _ALIASES.items():
        if hasattr(Tensor, target) and not hasattr(Tensor, alias):
            setattr(Tensor, alias, getattr(Tensor, target))
    for fn in (new_tensor, movedim, unflatten, fliplr, flipud):
        setattr(Tensor, fn.__name__, fn)
    Tensor.moveaxis = movedim
    Tensor.ravel = lambda self: self.reshape(-1)
    Tensor.square = lambda self: self.pow(2)
    Tensor.is_cpu = property(lambda self: self.device.type == "cpu")
    Tensor.is_complex = lambda self: False
    Tensor.is_signed = lambda self: self.dtype not in (_C.uint8, _C.bool)
    Tensor.get_device = lambda self: -1 if self.device.type == "cpu" else self.device.index
    Tensor.is_nonzero = lambda self: bool(self.item())
    Tensor.equal = lambda self, other: tuple(self.shape) == tuple(other.shape) and \
        bool((self == other).all())
    Tensor.is_same_size = lambda self, other: tuple(self.shape) == tuple(other.shape)
    Tensor.cuda = lambda self, device=None, non_blocking=False: self.to(
        "cuda" if device is None else device, non_blocking=non_blocking)
    Tensor.share_memory_ = lambda self: self
    Tensor.is_shared = lambda self: False
    for view in ("t", "transpose", "squeeze", "unsqueeze"):
        setattr(Tensor, view + "_", _inplace_view(view))
    Tensor.__reduce_ex__ = _reduce_ex
    Tensor.__reversed__ = lambda self: self if self.dim() == 0 else self.flip(0)

    def _delitem(self, index):
        raise TypeError("Tensor does not support deleting items")
    Tensor.__delitem__ = _delitem
    Tensor.__contains__ = _contains
    Tensor.__iter__ = _iter
    Tensor.__pos__ = lambda self: self
    Tensor.__rmatmul__ = lambda self, other: _C.matmul(other, self)
    Tensor.__ipow__ = lambda self, other: self.pow_(other)
    Tensor.__imod__ = lambda self, other: self.remainder_(other)
    Tensor.__ifloordiv__ = lambda self, other: self.copy_(self // other)
    Tensor.__array_priority__ = 1000  # numpy defers `ndarray op tensor` to the tensor

    names = {getattr(_C, n): n for n in ("bool", "uint8", "int8", "int16", "int32", "int64",
                                         "float16", "bfloat16", "float32", "float64")}
    _C.dtype.__repr__ = _C.dtype.__str__ = lambda self: "torch." + names[self]
