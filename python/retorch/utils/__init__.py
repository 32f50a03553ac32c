"""retorch.utils: helpers shaped like torch.utils (data, dlpack, tensorboard, ...)."""
from . import data, dlpack  # noqa: F401
