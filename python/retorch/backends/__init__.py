"""retorch.backends: settings of the compute backends (as torch.backends)."""
from . import cpu, cuda  # noqa: F401
