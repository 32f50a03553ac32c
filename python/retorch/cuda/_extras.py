"""torch.cuda's build queries and runtime switches that retorch/_device_api.py does not define:
get_arch_list/get_gencode_flags, has_half/has_magma, init, ipc_collect, device_of,
can_device_access_peer, the sync debug mode and is_current_stream_capturing."""
from .. import _C
from . import current_device, current_stream, device, device_count, is_available

__all__ = ["get_arch_list", "get_gencode_flags", "has_half", "has_magma", "init", "ipc_collect",
           "device_of", "can_device_access_peer", "get_sync_debug_mode", "set_sync_debug_mode",
           "is_current_stream_capturing"]

# float16 runs on every device retorch supports; linear algebra goes through cuSOLVER, not MAGMA.
has_half = bool(is_available())
has_magma = False

# CMakeLists.txt's default CMAKE_CUDA_ARCHITECTURES (80-real 90-real 90-virtual), in torch's
# notation: machine code for sm_80 and sm_90, PTX for compute_90. A build that sets its own
# architectures is not told apart: the library does not report them.
_ARCH_FLAGS = "sm_80 sm_90 compute_90"

_SYNC_MODES = {"default": 0, "warn": 1, "error": 2}
_sync_debug_mode = [0]


def _lazy_init():
    """torch's check before work that needs the device: AssertionError in a build without the
    CUDA backend (torch's CPU build), RuntimeError when no GPU is present (its CUDA build's)."""
    if not _C._cuda_is_built():
        raise AssertionError("Torch not compiled with CUDA enabled")
    if not is_available():
        raise RuntimeError("No CUDA GPUs are available")


def init():
    """Initializes CUDA (retorch does it on first use, so this only checks there is a device)."""
    _lazy_init()


def ipc_collect():
    """Frees memory other processes released through CUDA IPC: retorch shares no device memory
    between processes, so there is none."""
    _lazy_init()


def get_arch_list():
    """The CUDA architectures the library was compiled for ([] without a device, as torch's)."""
    if not is_available():
        return []
    return _ARCH_FLAGS.split()


def get_gencode_flags():
    """nvcc's -gencode flags for get_arch_list()."""
    flags = []
    for arch in get_arch_list():
        kind, number = arch.split("_")
        flags.append(f"-gencode compute=compute_{number},code={kind}_{number}")
    return " ".join(flags)


class device_of(device):  # noqa: N801  (torch.cuda.device_of)
    """Makes the device of a tensor or storage the current one for the block (no-op for one
    that is not on a CUDA device)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


def can_device_access_peer(device, peer_device):
    """Whether device can read peer_device's memory directly. retorch does not query peer access
    between two devices yet; a device and itself is False, as cudaDeviceCanAccessPeer says."""
    _lazy_init()
    from .memory import _device_index
    device, peer_device = _device_index(device), _device_index(peer_device)
    count = device_count()
    if device < 0 or device >= count:
        raise AssertionError("Invalid device id")
    if peer_device < 0 or peer_device >= count:
        raise AssertionError("Invalid peer device id")
    if device == peer_device:
        return False
    raise NotImplementedError("can_device_access_peer: retorch does not query peer access "
                              "between devices yet")


def get_sync_debug_mode():
    """0 (default), 1 (warn) or 2 (error): what synchronizing calls do; see set_sync_debug_mode."""
    _lazy_init()
    return _sync_debug_mode[0]


def set_sync_debug_mode(debug_mode):
    """"default"/0, "warn"/1 or "error"/2, as torch's; retorch does not detect synchronizing
    calls yet, so only the default is accepted."""
    _lazy_init()
    if isinstance(debug_mode, str):
        if debug_mode not in _SYNC_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               "`error`")
        debug_mode = _SYNC_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected one of 0,1,2")
    if debug_mode != 0:
        raise NotImplementedError("set_sync_debug_mode: retorch does not detect synchronizing "
                                  "calls yet; only the default mode (0) is available")
    _sync_debug_mode[0] = 0


def is_current_stream_capturing():
    """Whether a `retorch.cuda.graph` block is capturing the current stream (always False
    without a device, where nothing can be captured)."""
    if not is_available():
        return False
    from .graphs import _capturing
    s = current_stream(current_device())
    return (s.device.index, s.stream_id) in _capturing
