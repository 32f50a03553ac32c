"""retorch.distributed over one process: the default group's gloo backend keeps tensors through
every collective and raises torch's errors; nccl needs a CUDA device (skipped without one)."""
import numpy as np
import pytest

import retorch
import retorch.distributed as dist


@pytest.fixture(autouse=True)
def no_group():
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def test_one_rank_keeps_tensors_through_collectives():
    assert dist.is_available() and not dist.is_initialized()
    dist.init_process_group("gloo")
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
    t = retorch.arange(12.0).reshape(3, 4)
    want = t.numpy().copy()
    for op in dist.ReduceOp:
        dist.all_reduce(t, op=op)
        np.testing.assert_array_equal(t.numpy(), want)
    dist.broadcast(t, src=0)
    dist.barrier()
    np.testing.assert_array_equal(t.numpy(), want)


def test_errors_name_what_is_wrong():
    with pytest.raises(RuntimeError, match="has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="unknown backend 'mpi'"):
        dist.init_process_group("mpi")
    with pytest.raises(ValueError, match="world_size 2 needs a rendezvous"):
        dist.init_process_group("gloo", world_size=2, rank=0)
    dist.init_process_group()
    with pytest.raises(ValueError, match="src rank 3 is not in a group of 1"):
        dist.broadcast(retorch.ones(2), src=3)
    with pytest.raises(TypeError, match="expected a Tensor"):
        dist.all_reduce([1.0, 2.0])
    with pytest.raises(ValueError, match="must be contiguous"):
        dist.all_reduce(retorch.ones(3, 2).t())


@pytest.mark.skipif(retorch.cuda.is_available(), reason="checks the error without a device")
def test_nccl_without_a_device_is_a_clear_error():
    with pytest.raises(RuntimeError, match="nccl backend needs"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


@pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")
def test_nccl_all_reduce_on_one_gpu_keeps_the_tensor():
    dist.init_process_group("nccl")
    t = retorch.arange(1000.0).to("cuda")
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(1000.0, dtype=np.float32))
