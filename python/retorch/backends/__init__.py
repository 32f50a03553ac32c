"""retorch.backends: settings of the compute backends (as torch.backends)."""
from . import cpu  # noqa: F401
