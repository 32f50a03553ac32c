"""torch.autocast and its state functions: inside the region listed ops run in a lower-precision
dtype or in float32 (Note [Autocast] in retorch/ops/Autocast.cpp; the lists are ops.yaml's
`autocast:` policies)."""
import functools
import warnings

from .. import _C

# The lower-precision dtypes autocast runs in, per device type.
_SUPPORTED = {"cpu": (_C.bfloat16, _C.float16), "cuda": (_C.float16, _C.bfloat16)}


def is_autocast_available(device_type):
    """Whether autocast supports tensors of this device type (cpu and cuda)."""
    return device_type in _SUPPORTED


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _SUPPORTED:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")


def get_autocast_dtype(device_type):
    """The dtype autocast casts to on device_type (torch.get_autocast_dtype)."""
    _check_device_type(device_type)
    return _C._autocast_get_dtype(device_type)


class autocast:  # noqa: N801  (torch.autocast)
    """Runs the region's eligible ops on device_type in `dtype` (cpu: bfloat16, cuda: float16 by
    default) or in float32, as torch.autocast; usable as a context manager or a decorator.
    `enabled=False` turns autocast off inside an enclosing region; `cache_enabled` reuses the casts
    of float32 weights within the outermost region."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device_type(device_type)
        self.device = device_type
        self.fast_dtype = _C._autocast_get_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = (_C.is_autocast_cache_enabled() if cache_enabled is None
                               else bool(cache_enabled))
        self._enabled = bool(enabled)
        if self._enabled and self.fast_dtype not in _SUPPORTED[device_type]:
            names = ", ".join(str(d) for d in _SUPPORTED[device_type])
            warnings.warn(f"In {device_type} autocast, but the target dtype {self.fast_dtype} is "
                          f"not supported (supported: {names}). Disabling autocast.")
            self._enabled = False

    def __enter__(self):
        self._prev = _C._autocast_is_enabled(self.device)
        self._prev_dtype = _C._autocast_get_dtype(self.device)
        self._prev_cache_enabled = _C.is_autocast_cache_enabled()
        _C._autocast_set_enabled(self.device, self._enabled)
        if self._enabled:
            _C._autocast_set_dtype(self.device, self.fast_dtype)
        _C.autocast_increment_nesting()
        _C.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if _C.autocast_decrement_nesting() == 0:
            _C.clear_autocast_cache()
        _C._autocast_set_enabled(self.device, self._prev)
        _C._autocast_set_dtype(self.device, self._prev_dtype)
        _C.set_autocast_cache_enabled(self._prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cast(value, device_type, dtype):
    """value with its floating-point tensors on device_type (float64 excepted) cast to dtype,
    through lists, tuples and dicts (custom_fwd's cast_inputs)."""
    if isinstance(value, _C.Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype != _C.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorates an autograd.Function's forward (torch.amp.custom_fwd): with cast_inputs, an
    autocast region runs forward with its floating-point inputs cast to that dtype and autocast
    off; without, forward runs in the caller's autocast state, which custom_bwd restores."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        enabled = _C._autocast_is_enabled(device_type)
        ctx._fwd_autocast_dtype = _C._autocast_get_dtype(device_type)
        # With cast_inputs, forward (and so backward) runs with autocast off.
        ctx._fwd_used_autocast = enabled and cast_inputs is None
        if cast_inputs is None or not enabled:
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorates an autograd.Function's backward (torch.amp.custom_bwd): it runs in the autocast
    state its forward ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, dtype=ctx._fwd_autocast_dtype, enabled=ctx._fwd_used_autocast):
            return bwd(*args, **kwargs)

    return decorate_bwd


# torch's module-level autocast state functions (torch.is_autocast_enabled etc.); the unnamed
# device of the older ones is cuda, as in torch.
def is_autocast_enabled(device_type=None):
    return _C._autocast_is_enabled("cuda" if device_type is None else device_type)


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # torch.set_autocast_enabled(enabled): cuda
        device_type, enabled = "cuda", device_type
    _C._autocast_set_enabled(device_type, bool(enabled))


def is_autocast_cpu_enabled():
    return _C._autocast_is_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _C._autocast_set_enabled("cpu", bool(enabled))


def get_autocast_gpu_dtype():
    return _C._autocast_get_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _C._autocast_set_dtype("cuda", dtype)


def get_autocast_cpu_dtype():
    return _C._autocast_get_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _C._autocast_set_dtype("cpu", dtype)


def set_autocast_dtype(device_type, dtype):
    _C._autocast_set_dtype(device_type, dtype)
