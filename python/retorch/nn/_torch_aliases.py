"""The top-level torch.* forms of nn.functional ops (torch.conv3d, torch.max_pool3d, ...), with
torch's top-level signatures; retorch/__init__.py installs them."""
from . import functional as F

__all__ = ["conv3d", "conv_transpose3d", "conv_tbc", "max_pool3d", "avg_pool1d",
           "adaptive_avg_pool1d", "adaptive_max_pool1d", "max_pool1d_with_indices",
           "channel_shuffle", "native_channel_shuffle", "bilinear", "pdist"]

conv3d = F.conv3d
conv_transpose3d = F.conv_transpose3d
conv_tbc = F.conv_tbc
avg_pool1d = F.avg_pool1d
adaptive_avg_pool1d = F.adaptive_avg_pool1d
channel_shuffle = F.channel_shuffle
native_channel_shuffle = F.native_channel_shuffle
bilinear = F.bilinear
pdist = F.pdist


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def adaptive_max_pool1d(input, output_size):
    """(output, indices), as the top-level op always returns both."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, True)
