"""retorch.utils.dlpack: zero-copy tensor exchange through DLPack (like torch.utils.dlpack)."""
from .._C import _from_dlpack_capsule, _to_dlpack

__all__ = ["to_dlpack", "from_dlpack"]


def to_dlpack(tensor):
    """A 'dltensor' capsule sharing tensor's memory; it can be consumed once."""
    return _to_dlpack(tensor)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with ext_tensor: an object with __dlpack__ (numpy arrays, torch
    tensors, ...) or a 'dltensor' capsule. Only CPU memory can be imported."""
    if hasattr(ext_tensor, "__dlpack__"):
        device_type, _ = ext_tensor.__dlpack_device__()
        if int(device_type) not in (1, 3):  # kDLCPU, kDLCUDAHost: host memory, no stream
            raise RuntimeError(f"from_dlpack: unsupported device type {int(device_type)} "
                               "(retorch imports CPU memory only)")
        capsule = ext_tensor.__dlpack__()
    else:
        capsule = ext_tensor
    return _from_dlpack_capsule(capsule)
