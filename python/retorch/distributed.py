"""retorch.distributed: torch.distributed's collective interface over one process — a default
group with the gloo backend (CPU tensors) or nccl (CUDA tensors on a device, NCCL loaded at run
time); all_reduce/broadcast/barrier work in place. world_size > 1 needs a rendezvous between
processes that this build does not have yet, and says so."""
import enum

from . import _C
from ._C import Tensor

_d = _C._distributed


class ReduceOp(enum.IntEnum):
    SUM = 0
    PRODUCT = 1
    MAX = 2
    MIN = 3
    AVG = 4


def is_available():
    return True


def is_nccl_available():
    return _d.is_nccl_available()


def is_gloo_available():
    return True


def init_process_group(backend=None, init_method=None, world_size=-1, rank=-1, **kwargs):
    """Makes the default group. backend: "gloo" (default) or "nccl"; world_size and rank default
    to 1 and 0 (torch reads them from the environment of a launcher, which one process has not)."""
    backend = "gloo" if backend is None else str(backend).lower()
    _d.init_process_group(backend, 0 if rank == -1 else rank, 1 if world_size == -1 else world_size)


is_initialized = _d.is_initialized
get_rank = _d.get_rank
get_world_size = _d.get_world_size
get_backend = _d.get_backend
barrier = _d.barrier


def destroy_process_group(group=None):
    _d.destroy_process_group()


def _tensor(fn, tensor):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fn}: expected a Tensor, got {type(tensor).__name__}")
    return tensor


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces `tensor` across the group, in place."""
    _d.all_reduce(_tensor("all_reduce", tensor), int(op))


def broadcast(tensor, src, group=None, async_op=False):
    """Copies rank src's `tensor` to every rank, in place."""
    _d.broadcast(_tensor("broadcast", tensor), int(src))
