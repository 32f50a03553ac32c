"""retorch.utils: helpers shaped like torch.utils (data, dlpack, checkpoint, hooks, ...)."""
from . import data, dlpack  # noqa: F401
from . import checkpoint, hooks  # noqa: F401
