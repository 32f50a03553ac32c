"""Storages, as torch's: Tensor.storage() (TypedStorage), untyped_storage() (UntypedStorage), the
legacy FloatStorage & co., and Tensor.set_ onto a tensor or a storage."""
from . import _C
from ._api_extras import _contiguous_strides
from ._tensor import _swap_in

__all__ = ["UntypedStorage", "TypedStorage", "is_storage", "FloatStorage", "DoubleStorage",
           "HalfStorage", "BFloat16Storage", "LongStorage", "IntStorage", "ShortStorage",
           "CharStorage", "ByteStorage", "BoolStorage"]


# Note [Storage objects]
# A storage object wraps a 1-D uint8 tensor over the whole memory of a tensor's storage
# (_C._storage_bytes: offset 0, every byte), so it shares that memory (and its version counter)
# with every tensor viewing it; a TypedStorage reads those bytes as its dtype. Storages made
# here (UntypedStorage(n), FloatStorage([1, 2])) are the bytes of a new tensor. Tensor.set_
# makes a tensor a view of such bytes through Tensor.data (Note [One Python object per tensor]
# keeps it the same object), which is why it refuses a tensor that requires grad, as torch does.
class UntypedStorage:
    """The bytes under a tensor: torch.UntypedStorage."""

    def __init__(self, size_or_bytes=0, *, device=None, _bytes=None):
        if _bytes is None:
            if isinstance(size_or_bytes, int):
                _bytes = _C.empty([size_or_bytes], dtype=_C.uint8, device=device)
            else:
                from . import tensor
                _bytes = tensor(list(size_or_bytes), dtype=_C.uint8, device=device)
        self._bytes = _bytes

    def data_ptr(self):
        return self._bytes.data_ptr()

    def nbytes(self):
        return self._bytes.numel()

    size = nbytes
    __len__ = nbytes

    def element_size(self):
        return 1

    @property
    def device(self):
        return self._bytes.device

    @property
    def is_cuda(self):
        return self._bytes.is_cuda

    def __getitem__(self, i):
        return self._bytes[i].item() if isinstance(i, int) else UntypedStorage(_bytes=self._bytes[i])

    def __setitem__(self, i, value):
        self._bytes[i] = value

    def tolist(self):
        return self._bytes.tolist()

    def fill_(self, value):
        self._bytes.fill_(value)
        return self

    def copy_(self, source, non_blocking=False):
        self._bytes.copy_(source._bytes)
        return self

    def clone(self):
        return UntypedStorage(_bytes=self._bytes.clone())

    def cpu(self):
        return self if self.device.type == "cpu" else UntypedStorage(_bytes=self._bytes.cpu())

    def __repr__(self):
        return (f" {' '.join(str(v) for v in self.tolist())}\n[torch.storage.UntypedStorage(device="
                f"{self.device}) of size {self.nbytes()}]")


class TypedStorage:
    """The elements under a tensor, as its dtype: torch.TypedStorage (what Tensor.storage()
    gives)."""

    def __init__(self, *args, dtype=None, device=None, wrap_storage=None):
        self.dtype = dtype if dtype is not None else _C.get_default_dtype()
        if wrap_storage is not None:
            self._untyped = wrap_storage
            return
        if len(args) == 1 and not isinstance(args[0], int):  # data
            from . import tensor  # (the package's, complete by the time a storage is made)
            values = tensor(list(args[0]), dtype=self.dtype, device=device)
            self._untyped = UntypedStorage(_bytes=_C._storage_bytes(values))
            return
        n = args[0] if args else 0
        t = _C.empty([n], dtype=self.dtype, device=device)
        self._untyped = UntypedStorage(_bytes=_C._storage_bytes(t))

    def _elements(self):
        """The storage's bytes as a 1-D tensor of its dtype (whole elements only)."""
        itemsize = self.element_size()
        whole = self._untyped.nbytes() // itemsize * itemsize
        return self._untyped._bytes[:whole].view(self.dtype)

    def untyped(self):
        return self._untyped

    _untyped_storage = property(untyped)

    def data_ptr(self):
        return self._untyped.data_ptr()

    def element_size(self):
        return self.dtype.itemsize

    def nbytes(self):
        return self._untyped.nbytes()

    def size(self):
        return self._untyped.nbytes() // self.element_size()

    __len__ = size

    @property
    def device(self):
        return self._untyped.device

    @property
    def is_cuda(self):
        return self._untyped.is_cuda

    def __getitem__(self, i):
        return self._elements()[i].item() if isinstance(i, int) else self._elements()[i].tolist()

    def __setitem__(self, i, value):
        self._elements()[i] = value

    def tolist(self):
        return self._elements().tolist()

    def fill_(self, value):
        self._elements().fill_(value)
        return self

    def copy_(self, source, non_blocking=False):
        self._elements().copy_(source._elements())
        return self

    def clone(self):
        return TypedStorage(wrap_storage=self._untyped.clone(), dtype=self.dtype)

    def cpu(self):
        return self if self.device.type == "cpu" else \
            TypedStorage(wrap_storage=self._untyped.cpu(), dtype=self.dtype)

    def __repr__(self):
        return (f" {' '.join(str(v) for v in self.tolist())}\n[torch.storage.TypedStorage(dtype="
                f"{self.dtype}, device={self.device}) of size {self.size()}]")


def _legacy_storage(name, dtype):
    """torch.FloatStorage & co.: callables making a TypedStorage of that dtype."""
    def make(*args, device=None):
        return TypedStorage(*args, dtype=dtype, device=device)
    return type(name, (), {"__new__": lambda cls, *args, **kw: make(*args, **kw),
                           "dtype": dtype, "__doc__": f"torch.{name}: a TypedStorage of {dtype}"})


FloatStorage = _legacy_storage("FloatStorage", _C.float32)
DoubleStorage = _legacy_storage("DoubleStorage", _C.float64)
HalfStorage = _legacy_storage("HalfStorage", _C.float16)
BFloat16Storage = _legacy_storage("BFloat16Storage", _C.bfloat16)
LongStorage = _legacy_storage("LongStorage", _C.int64)
IntStorage = _legacy_storage("IntStorage", _C.int32)
ShortStorage = _legacy_storage("ShortStorage", _C.int16)
CharStorage = _legacy_storage("CharStorage", _C.int8)
ByteStorage = _legacy_storage("ByteStorage", _C.uint8)
BoolStorage = _legacy_storage("BoolStorage", _C.bool)
_LEGACY = {s.dtype: s for s in (FloatStorage, DoubleStorage, HalfStorage, BFloat16Storage,
                                LongStorage, IntStorage, ShortStorage, CharStorage, ByteStorage,
                                BoolStorage)}


def is_storage(obj):
    return isinstance(obj, (TypedStorage, UntypedStorage))


def _storage(self):
    return TypedStorage(wrap_storage=self.untyped_storage(), dtype=self.dtype)


def _untyped_storage(self):
    return UntypedStorage(_bytes=_C._storage_bytes(self))


def _storage_type(self):
    return _LEGACY[self.dtype]


def _set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Tensor.set_: self becomes a view of source's memory (a tensor: its geometry too; a
    storage: `size` and `stride` from `storage_offset` elements, the whole storage by default);
    set_() leaves self empty."""
    if source is None:
        return _swap_in(self, lambda: _C.empty([0], dtype=self.dtype, device=self.device),
                        "set_")
    if isinstance(source, _C.Tensor):
        if source.dtype is not self.dtype:
            raise RuntimeError(f"set_: expected source of dtype {self.dtype}, got "
                               f"{source.dtype}")
        return _swap_in(self, lambda: source, "set_")
    untyped = source.untyped() if isinstance(source, TypedStorage) else source
    if isinstance(source, TypedStorage) and source.dtype is not self.dtype:
        raise RuntimeError(f"set_: expected a storage of dtype {self.dtype}, got "
                           f"{source.dtype}")
    elements = TypedStorage(wrap_storage=untyped, dtype=self.dtype)._elements()
    size = [elements.numel() - storage_offset] if size is None else list(size)
    stride = _contiguous_strides(size) if stride is None else list(stride)
    return _swap_in(self, lambda: elements.as_strided(size, stride, storage_offset), "set_")


def install(Tensor):
    Tensor.storage = _storage
    Tensor.untyped_storage = _untyped_storage
    Tensor.storage_type = _storage_type
    Tensor.set_ = _set_
