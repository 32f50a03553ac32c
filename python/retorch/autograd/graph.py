"""autograd.graph: saved-tensor hooks (saved_tensors_hooks, save_on_cpu,
disable_saved_tensors_hooks), as torch's."""
import contextlib
import threading

from .. import _C


class saved_tensors_hooks:
    """Within the block, each tensor autograd saves for backward (built-in ops and Functions'
    save_for_backward alike) is given to pack_hook when it is saved, and what pack_hook returns
    is kept instead of the tensor; unpack_hook(packed) must give the tensor back when backward
    (or ctx.saved_tensors) needs it. The innermost block's hooks apply; they are this thread's.
    Versions are not checked through hooks, as torch's."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _C._push_saved_tensors_default_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args):
        _C._pop_saved_tensors_default_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU (in pinned memory with pin_memory, where pinning is
    available) and copied back to their device when unpacked."""

    def __init__(self, pin_memory=False):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return tensor.device, tensor.cpu()  # (on the CPU, the tensor itself)
            packed = tensor.to("cpu", copy=True)
            return tensor.device, packed.pin_memory() if _rt().cuda.is_available() else packed

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


_disabled = threading.local()  # .message: the message in effect on this thread, or None


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Within the block, entering saved_tensors_hooks raises RuntimeError(error_message)."""
    previous = getattr(_disabled, "message", None)
    try:
        _C._saved_tensors_hooks_disable(error_message)
        _disabled.message = error_message
        yield
    finally:
        _disabled.message = previous
        if previous is None:
            _C._saved_tensors_hooks_enable()
        else:
            _C._saved_tensors_hooks_disable(previous)


def _rt():
    import sys
    return sys.modules["retorch"]
