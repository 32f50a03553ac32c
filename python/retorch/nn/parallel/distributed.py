"""nn.parallel.DistributedDataParallel over retorch.distributed's one-process group: torch's
constructor checks, no_sync, and its unused-parameter error; with world size 1 the gradient
all-reduce and the parameter/buffer broadcasts are identities."""
import contextlib
import warnings
import weakref

from ... import _C
from ... import distributed as dist
from ...profiler import record_function
from ..modules.module import Module
from ..parameter import UninitializedParameter

__all__ = ["DistributedDataParallel"]

_UNUSED_PARAMETERS = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This "
    "error indicates that your module has parameters that were not used in producing loss. You "
    "can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `retorch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't able "
    "to locate the output tensors in the return value of your module's `forward` function. "
    "Please include the loss function and the structure of the return value of `forward` of "
    "your module when reporting this issue (e.g. list, dict, iterable).\n"
    "Parameter indices which did not receive grad for rank {rank}: {indices}")


# Note [One-process DDP]: torch's Reducer all-reduces bucketed gradients as backward produces
# them and broadcasts rank 0's parameters and buffers. retorch.distributed has one process
# (init_process_group refuses world_size > 1), where every one of those collectives returns its
# input, so none is issued; the constructor refuses a larger group rather than train unsynced.
# What is kept is the Reducer's bookkeeping that a user sees on one process too: a hook per
# parameter marks it ready in a synced backward, and the next synced forward raises torch's
# error if a backward ran without reaching every parameter (unless find_unused_parameters).
class DistributedDataParallel(Module):
    """Wraps `module` (state_dict keys gain a "module." prefix) for data-parallel training over
    the default process group. See Note [One-process DDP]."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=25,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        params = list(module.parameters())
        if not any(p.requires_grad for p in params):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        device_types = {p.device.type for p in params}
        if len(device_types) != 1:
            raise ValueError("DistributedDataParallel's input module must be on the same type of "
                             "devices, but input module parameters locate in "
                             f"{device_types}.")
        devices = {p.device for p in params}
        if not device_ids or device_types == {"cpu"} or len(devices) > 1:
            if device_ids or output_device:
                raise ValueError("DistributedDataParallel device_ids and output_device arguments "
                                 "only work with single-device/multiple-device GPU modules or "
                                 f"CPU modules, but got device_ids {device_ids}, output_device "
                                 f"{output_device}, and module parameters {devices}.")
            self.device_ids, self.output_device = None, None
        else:
            self.device_ids = [_device_index(d) for d in device_ids]
            self.output_device = _device_index(device_ids[0] if output_device is None
                                               else output_device)
        if not dist.is_initialized():
            raise RuntimeError("Default process group has not been initialized, please make sure "
                               "to call init_process_group.")
        if dist.get_world_size() > 1:  # unreachable today; see Note [One-process DDP]
            raise NotImplementedError("DistributedDataParallel: reducing gradients across "
                                      "processes is not implemented; world_size 1 only")
        # None stands for the default group: retorch.distributed has no group objects.
        self.process_group = process_group
        self.static_graph = bool(static_graph)
        self.dim = dim
        self.module = module
        self.device = params[0].device
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.parameters_to_ignore = list(getattr(module, "_ddp_params_and_buffers_to_ignore", []))
        if check_reduction:
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module is "
                          "deprecated. Please avoid using it.")
        if any(isinstance(p, UninitializedParameter) for p in params):
            raise RuntimeError("Modules with uninitialized parameters can't be used with "
                               "`DistributedDataParallel`. Run a dummy forward pass to correctly "
                               "initialize the modules")
        self.broadcast_bucket_size = int(250 * 1024 * 1024)
        self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)
        self._install_ready_hooks()

    def _install_ready_hooks(self):
        # Indices count the parameters that require grad, in module order, as torch's do.
        ignore = set(self.parameters_to_ignore)
        tracked = [p for n, p in self.module.named_parameters()
                   if p.requires_grad and n not in ignore]
        self._num_tracked = len(tracked)
        self._ready = set()
        self._expect_hooks = False
        self._hook_handles = []
        me = weakref.ref(self)  # the hooks must not keep a dropped wrapper alive

        def make_hook(index):
            def hook(grad):
                ddp = me()
                if ddp is not None and ddp._expect_hooks:
                    ddp._ready.add(index)
                return grad
            return hook

        for i, p in enumerate(tracked):
            self._hook_handles.append(p.register_hook(make_hook(i)))

    def _check_prior_reduction(self):
        started = bool(self._ready)
        if started and len(self._ready) < self._num_tracked and not self.find_unused_parameters:
            missing = [i for i in range(self._num_tracked) if i not in self._ready]
            raise RuntimeError(_UNUSED_PARAMETERS.format(
                rank=dist.get_rank(), indices=" ".join(str(i) for i in missing)))

    def forward(self, *inputs, **kwargs):
        with record_function("DistributedDataParallel.forward"):
            sync = _C.is_grad_enabled() and self.require_backward_grad_sync
            if sync:
                self._check_prior_reduction()
                self._ready = set()
            self._expect_hooks = sync
            self.require_forward_param_sync = sync
            return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Runs backward passes without gradient synchronization (here, without the
        unused-parameter bookkeeping); the first synced backward after it reduces them all."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _set_static_graph(self):
        self.static_graph = True


def _device_index(device):
    """torch's _get_device_index: an int, or a device (or its string) with its index, 0 if
    none."""
    if isinstance(device, int):
        return device
    index = _C.device(device).index if isinstance(device, str) else device.index
    return 0 if index is None else index
