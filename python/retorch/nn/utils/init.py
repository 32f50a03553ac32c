"""nn.utils.skip_init: build a module with its parameters and buffers left uninitialized."""
import inspect


def skip_init(module_cls, *args, **kwargs):
    """Instantiates module_cls(*args, **kwargs) without running its initialization: the module is
    built on the meta device (no memory, no init kernels) and then moved with to_empty to the
    requested device (default "cpu"), so its values are whatever torch.empty would hold. The
    class must take a `device` argument and do nothing but nn.init calls on its parameters in
    its constructor."""
    from ..modules.module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
