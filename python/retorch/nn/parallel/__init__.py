"""retorch.nn.parallel (torch.nn.parallel): DataParallel, data_parallel and
DistributedDataParallel."""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel"]
