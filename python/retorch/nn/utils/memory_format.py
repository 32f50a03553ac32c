"""nn.utils.convert_conv2d_weight_memory_format: relayout only the Conv2d / ConvTranspose2d
weights of a module tree (e.g. to channels_last), leaving every other tensor as it is."""


def convert_conv2d_weight_memory_format(module, memory_format):
    """Gives the weight of every nn.Conv2d and nn.ConvTranspose2d in module (recursively, module
    included) the strides of memory_format, keeping its values and its Parameter object; returns
    module."""
    from ...autograd import no_grad
    from ..modules.conv import Conv2d, ConvTranspose2d
    if isinstance(module, (Conv2d, ConvTranspose2d)):
        with no_grad():
            weight = module.weight.detach().clone().contiguous(memory_format=memory_format)
        module.weight.data = weight.resize_(weight.size(), memory_format=memory_format)
    for child in module.children():
        convert_conv2d_weight_memory_format(child, memory_format)
    return module
