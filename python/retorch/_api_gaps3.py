"""More torch top-level names composed in Python: the full-sequence RNN functions (lstm, gru,
rnn_tanh, rnn_relu), as_strided_scatter, conj_physical, grid_sampler*, affine_grid_generator,
from_file, to_dlpack, and dense-tensor attributes (is_nested, dense_dim, ...)."""
import os

import numpy as np

from . import _C
from .utils.dlpack import to_dlpack

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "as_strided_scatter", "conj_physical",
           "conj_physical_", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
           "affine_grid_generator", "from_file", "is_vulkan_available", "to_dlpack"]


# ---------------------------------------------------------------- full-sequence RNNs
# torch's two overloads per function: (input, hx, params, has_biases, num_layers, dropout, train,
# bidirectional, batch_first) on a padded (T, B, I) input, and (data, batch_sizes, hx, params,
# has_biases, num_layers, dropout, train, bidirectional) on PackedSequence fields whose hx is
# already in the packed (sorted) batch order. Both run the C++ time loop nn.LSTM uses
# (Note [RNN time loop] in retorch/nn/RNN.cpp), so autograd differentiates them.

_RNN_NAMES = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _check_rnn(mode, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    """(h0, c0, hidden_size, proj_size) after torch's checks on hidden states and params."""
    if mode == "LSTM":
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        h0, c0 = hx
    else:
        h0, c0 = hx, None
    for t in (h0, c0):
        if t is not None and t.dim() < 3:  # torch reads size(2) of each
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-t.dim()}, {t.dim() - 1}], but got 2)")
        if t is not None and t.dim() != 3:
            raise RuntimeError(f"{mode.lower()}: expected 3-D hidden states, got {t.dim()}-D")
    # Different h and c widths mean the LSTM projects h (proj_size), as torch infers it.
    proj = mode == "LSTM" and h0.shape[2] != c0.shape[2]
    per = 2 + (2 if has_biases else 0) + (1 if proj else 0)
    if len(params) % per != 0:
        raise RuntimeError("got an incorrect number of RNN parameters")
    dirs = 2 if bidirectional else 1
    if bidirectional and (len(params) // per % 2 or h0.shape[0] % 2):
        raise RuntimeError("Odd number of params or hiddens given to a bidirectional RNN")
    if num_layers < 1 or len(params) // per < num_layers * dirs or \
            h0.shape[0] < num_layers * dirs:
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    if len(params) // per != num_layers * dirs or h0.shape[0] != num_layers * dirs:
        raise RuntimeError(f"{mode.lower()}: expected {num_layers * dirs} (layer, direction) "
                           f"weight sets and hidden states, got {len(params) // per} and "
                           f"{h0.shape[0]}")
    if train and dropout != 0 and num_layers > 1 and not 0 <= dropout <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout}")
    hidden = (c0 if mode == "LSTM" else h0).shape[2]
    return h0, c0, hidden, (h0.shape[2] if proj else 0)


def _run_rnn(mode, input, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
             bidirectional, batch_first):
    params = list(params)
    h0, c0, hidden, proj = _check_rnn(mode, hx, params, has_biases, num_layers, dropout, train,
                                      bidirectional)
    if batch_sizes is None:
        if input.dim() < 3:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-input.dim()}, {input.dim() - 1}], but got 2)")
        if input.dim() != 3:
            raise RuntimeError(f"{mode.lower()}: expected a 3-D input, got {input.dim()}-D")
        source = input
    else:
        if batch_sizes.dtype != _C.int64:
            raise RuntimeError(f"expected scalar type Long but found "
                               f"{str(batch_sizes.dtype).replace('torch.', '')}")
        source = (input, batch_sizes, None, None)  # hx is in packed order: nothing to permute
    out, h, c = _C._nn.rnn_forward(
        _RNN_NAMES[mode], mode, source, h0, c0, params, params[0].shape[1], hidden,
        num_layers, bool(has_biases), bool(batch_first), float(dropout), bool(train),
        bool(bidirectional), proj)
    if batch_sizes is not None:
        out = out[0]
    return (out, h, c) if mode == "LSTM" else (out, h)


def _rnn_function(mode):
    name = mode.lower()

    def padded(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first):
        return _run_rnn(mode, input, None, hx, params, has_biases, num_layers, dropout, train,
                        bidirectional, batch_first)

    def packed(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
               bidirectional):
        return _run_rnn(mode, data, batch_sizes, hx, params, has_biases, num_layers, dropout,
                        train, bidirectional, False)

    def fn(*args, **kwargs):
        # The packed overload has batch_sizes (a Tensor) where the padded one has hx (a
        # sequence for lstm) or, for the others, hx (a Tensor) where the padded one has params.
        if "data" in kwargs or "batch_sizes" in kwargs:
            is_packed = True
        elif mode == "LSTM":
            is_packed = len(args) > 1 and isinstance(args[1], _C.Tensor)
        else:
            is_packed = len(args) > 2 and isinstance(args[2], _C.Tensor)
        try:
            return (packed if is_packed else padded)(*args, **kwargs)
        except TypeError as e:
            if "argument" not in str(e):
                raise
            raise TypeError(f"{name}() received an invalid combination of arguments: {e}") \
                from None

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"torch.{name}: a stacked {_RNN_NAMES[mode]} ({mode}) over a padded (T, B, I) "
                  "input or packed (data, batch_sizes); params in torch's flat order.")
    return fn


lstm = _rnn_function("LSTM")
gru = _rnn_function("GRU")
rnn_tanh = _rnn_function("RNN_TANH")
rnn_relu = _rnn_function("RNN_RELU")


# ---------------------------------------------------------------- as_strided_scatter

def _dense_order(t):
    """(dims outer to inner, strides) of torch's clone(t): t's own strides when t is
    non-overlapping and dense, else dense strides in t's stride order (TensorIterator's
    ordering: stride 0 leaves dims where they are, equal strides put the smaller size inside)."""
    shape, stride, nd = list(t.shape), list(t.stride()), t.dim()
    big = [d for d in range(nd) if shape[d] != 1]
    by_stride = sorted(big, key=lambda d: stride[d], reverse=True)
    expect = 1
    dense = True
    for d in reversed(by_stride):
        if stride[d] != expect:
            dense = False
            break
        expect *= shape[d]
    if dense:
        outer = sorted(range(nd), key=lambda d: (shape[d] != 1, stride[d]), reverse=True)
        return outer, stride
    perm = list(range(nd - 1, -1, -1))  # perm[0] is the innermost dim

    def should_swap(d0, d1):
        s0, s1 = stride[d0], stride[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0
    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out_stride, step = [0] * nd, 1
    for d in perm:
        out_stride[d] = step
        step *= shape[d]
    return perm[::-1], out_stride


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """input's clone with its as_strided(size, stride, storage_offset) view replaced by src.
    Written as an index_put on the clone's storage order, so both inputs get gradients."""
    size, stride = [int(s) for s in size], [int(s) for s in stride]
    if list(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {size}")
    offset = 0 if storage_offset is None else int(storage_offset)
    outer, out_stride = _dense_order(input)
    n = input.numel()
    flat = input.permute(outer).reshape(-1)  # the clone's storage, in order
    positions = _C.arange(n, dtype=_C.int64).as_strided(size, stride, offset)  # bounds-checked
    flat = flat.index_put((positions.reshape(-1),), src.reshape(-1).to(input.dtype))
    return flat.as_strided(list(input.shape), out_stride, 0)


# ---------------------------------------------------------------- conj_physical (real only)

def conj_physical(input, *, out=None):
    """The conjugate of a real tensor is the tensor itself (torch returns input unchanged)."""
    if out is not None:
        if out.shape != input.shape:
            out.resize_(input.shape)
        return out.copy_(input)
    return input


def conj_physical_(input):
    return input


# ---------------------------------------------------------------- grid_sampler, affine grids

_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _check_flag(fn, align_corners, position):
    if not isinstance(align_corners, bool):
        raise TypeError(f"{fn}(): argument 'align_corners' (position {position}) must be bool, "
                        f"not {type(align_corners).__name__}")


def _check_grid_sampler(dims, input, grid, interpolation_mode, padding_mode):
    if input.dim() != dims or grid.dim() != dims:
        raise RuntimeError(f"grid_sampler(): expected {dims}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    # torch silently returns zeros for unknown codes; say so instead.
    if interpolation_mode not in _INTERPOLATION:
        raise RuntimeError(f"grid_sampler(): unknown interpolation mode {interpolation_mode}")
    if padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler(): unknown padding mode {padding_mode}")


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """F.grid_sample with torch's integer codes: interpolation 0 bilinear, 1 nearest,
    2 bicubic; padding 0 zeros, 1 border, 2 reflection (what F.grid_sample supports here)."""
    _check_flag("grid_sampler_2d", align_corners, 5)
    _check_grid_sampler(4, input, grid, interpolation_mode, padding_mode)
    from .nn import functional as F
    return F.grid_sample(input, grid, _INTERPOLATION[interpolation_mode],
                         _PADDING[padding_mode], align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """F.grid_sample of (N, C, D, H, W) input with the codes of grid_sampler_2d; bicubic (2)
    raises, as torch's volumetric sampler does."""
    _check_flag("grid_sampler_3d", align_corners, 5)
    _check_grid_sampler(5, input, grid, interpolation_mode, padding_mode)
    from .nn import functional as F
    return F.grid_sample(input, grid, _INTERPOLATION[interpolation_mode],
                         _PADDING[padding_mode], align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    _check_flag("grid_sampler", align_corners, 5)
    sampler = grid_sampler_3d if input.dim() == 5 else grid_sampler_2d
    return sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta, size, align_corners):
    """F.affine_grid without its warnings and defaults: the (N, H, W, 2) grid of theta."""
    _check_flag("affine_grid_generator", align_corners, 3)
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    if len(size) == 4 and list(theta.shape) != [size[0], 2, 3]:
        n, _, h, w = size
        raise RuntimeError(f"shape '[{n}, {h}, {w}, 2]' is invalid for input of size "
                           f"{n * h * w * theta.shape[-2] if theta.dim() == 3 else theta.numel()}")
    from .nn import functional as F
    return F.affine_grid(theta, size, align_corners)


# ---------------------------------------------------------------- from_file

def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False, requires_grad=False):
    """size elements of dtype read from the file's raw bytes. shared=True maps the file
    read-write (numpy.memmap, created or grown to fit as torch does) so writes reach it;
    otherwise the bytes are copied (torch maps privately: the same values, copy-on-write)."""
    if not isinstance(filename, str):
        raise TypeError(f"from_file(): argument 'filename' (position 1) must be str, not "
                        f"{type(filename).__name__}")
    from . import get_default_dtype
    dtype = get_default_dtype() if dtype is None else dtype
    item = _C.empty([0], dtype=dtype).element_size()
    size, nbytes = int(size), int(size) * item
    if size < 0:
        raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: Cannot "
                           "allocate memory (12)")
    # numpy has no bfloat16 and stores bool as 0/1: read those as same-width integers, then
    # reinterpret or compare.
    raw = {_C.bfloat16: np.int16, _C.bool: np.uint8}.get(dtype)
    np_dtype = raw or _C.empty([0], dtype=dtype).numpy().dtype
    if shared:
        fd = os.open(filename, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < nbytes:
                os.ftruncate(fd, nbytes)
        finally:
            os.close(fd)
        # numpy cannot map 0 bytes; an empty tensor has nothing to share anyway.
        arr = np.memmap(filename, dtype=np_dtype, mode="r+", shape=(size,)) if size else None
    else:
        try:
            with open(filename, "rb") as f:
                data = f.read(nbytes)
        except OSError as e:
            raise RuntimeError(f"unable to open file <{filename}> in read-only mode: "
                               f"{e.strerror} ({e.errno})") from None
        if len(data) < nbytes:
            raise RuntimeError(f"file <{filename}> size is smaller than the required mapping "
                               f"size <{nbytes}>")
        arr = np.frombuffer(bytearray(data), dtype=np_dtype)
    if size == 0:
        t = _C.empty([0], dtype=dtype)
    else:
        t = _C.from_numpy(arr)  # shares arr's memory, and keeps the memmap alive
        if dtype == _C.bfloat16:
            t = t.view(_C.bfloat16)
        elif dtype == _C.bool:
            t = t.view(_C.bool) if shared else t != 0
    if requires_grad:
        t.requires_grad_(True)
    return t


def is_vulkan_available():
    return False


def _sparse_only(name):
    """torch 1.13 registers dense_dim/sparse_dim for sparse layouts only: a dense tensor raises
    NotImplementedError (later torch answers dim() and 0)."""
    def fn(self):
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                  f"'{self.device.type.upper()}' backend: it is only available "
                                  "for sparse layouts, and retorch tensors are dense")
    fn.__name__ = name
    return fn


# ---------------------------------------------------------------- install

def install(Tensor):
    methods = {
        "as_strided_scatter": as_strided_scatter, "conj_physical": conj_physical,
        "conj_physical_": conj_physical_, "dense_dim": _sparse_only("dense_dim"),
        "sparse_dim": _sparse_only("sparse_dim"),
    }
    for name, fn in methods.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    for name in ("is_nested", "is_vulkan", "is_mkldnn", "is_ort"):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, property(lambda self: False))
