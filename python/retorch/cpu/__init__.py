"""retorch.cpu: torch.cpu's names (the cpu's autocast in retorch.cpu.amp)."""
from . import amp  # noqa: F401


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """Nothing to wait for: cpu ops finish before they return."""
