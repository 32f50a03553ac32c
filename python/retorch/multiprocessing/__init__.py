"""retorch.multiprocessing: Python's multiprocessing under torch.multiprocessing's names, + spawn.

Unlike torch.multiprocessing, tensors are NOT moved into shared memory when they are sent to
another process: a tensor put on a Queue or passed as a Process argument is pickled and arrives
as a copy, so in-place changes in the child are not seen by the parent. Share results through
return values, queues or files instead. The sharing-strategy functions exist for compatibility
and only record the chosen name.
"""
import multiprocessing
import sys

from multiprocessing import *  # noqa: F401,F403

from .spawn import (ProcessContext, ProcessException, ProcessExitedException,  # noqa: F401
                    ProcessRaisedException, SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
           "ProcessExitedException", "SpawnContext"]
__all__ += multiprocessing.__all__

if sys.platform == "darwin" or sys.platform == "win32":
    _sharing_strategy = "file_system"
    _all_sharing_strategies = {"file_system"}
else:
    _sharing_strategy = "file_descriptor"
    _all_sharing_strategies = {"file_descriptor", "file_system"}


def set_sharing_strategy(new_strategy):
    """Records the strategy name (torch's: how shared tensors are passed); checked as torch's."""
    global _sharing_strategy
    assert new_strategy in _all_sharing_strategies
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return _all_sharing_strategies
