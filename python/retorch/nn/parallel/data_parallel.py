"""nn.DataParallel and nn.parallel.data_parallel. Without a GPU torch's DataParallel just calls
its module, and so does this one; scattering a batch over several GPUs is not implemented."""
from ... import cuda
from ...profiler import record_function
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _no_scatter(what):
    raise NotImplementedError(f"{what}: splitting a batch over several GPUs (scatter, replicate, "
                              "parallel_apply, gather) is not implemented in retorch; call the "
                              "module directly, or use DistributedDataParallel")


class DataParallel(Module):
    """Wraps `module` (as self.module, so state_dict keys gain a "module." prefix). With no GPU
    available, as in torch, device_ids is [] and forward calls the module unchanged; with one,
    the constructor raises NotImplementedError rather than run the batch unsplit."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if cuda.is_available():
            _no_scatter("DataParallel")
        # torch's CPU-only branch sets only these two attributes (no dim, no output_device).
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        with record_function("DataParallel.forward"):
            return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional DataParallel. It needs a GPU: without one torch fails with a TypeError
    (it indexes its empty device list), and so does this, with a message that says why."""
    if cuda.is_available():
        _no_scatter("data_parallel")
    raise TypeError("data_parallel: no GPU is available to run the module on (torch fails here "
                    "too); call the module directly, or wrap it in DataParallel, which calls it "
                    "unchanged without a GPU")
