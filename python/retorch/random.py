"""retorch.random: torch.random's seeding, generator state and fork_rng (default generator)."""
import contextlib
import warnings

from . import _C

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]

_U64 = 1 << 64


def set_rng_state(new_state):
    """Restores the default CPU generator to a state from get_rng_state (a uint8 tensor)."""
    _C._device_set_rng_state("cpu", new_state, -1)


def get_rng_state():
    """The default CPU generator's state as a uint8 tensor (retorch's is 16 bytes: Philox seed
    and offset; torch's Mersenne Twister state is 5056)."""
    return _C._device_get_rng_state("cpu", -1)


def _cuda():
    from . import cuda
    return cuda if cuda.is_available() else None


def manual_seed(seed):
    """Seeds the default generator (and the CUDA ones when there is a GPU); returns the default
    generator. A negative seed s stands for 2**64 + s, as in torch."""
    seed = int(seed)
    if seed < -(1 << 63) or seed >= _U64:
        raise RuntimeError("Overflow when unpacking long")
    if seed < 0:
        seed += _U64
    cuda = _cuda()
    if cuda is not None:
        cuda.manual_seed_all(seed)
    return _C.manual_seed(seed)


def seed():
    """Seeds the default generator from a non-deterministic number and returns it."""
    s = _C.default_generator().seed()
    cuda = _cuda()
    if cuda is not None:
        cuda.manual_seed_all(s)
    return s


def initial_seed():
    """The seed the default generator was last seeded with."""
    return _C.default_generator().initial_seed()


_fork_rng_warned_already = False


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices"):
    """Saves the CPU generator's state (and the listed CUDA devices'; by default every visible
    one) and restores it when the block exits, however it exits. enabled=False does nothing."""
    global _fork_rng_warned_already
    if not enabled:
        yield
        return
    from . import cuda
    if devices is None:
        num_devices = cuda.device_count()
        if num_devices > 1 and not _fork_rng_warned_already:
            warnings.warn(
                f"CUDA reports that you have {num_devices} available devices, and you have used "
                f"{_caller} without explicitly specifying which devices are being used. For "
                "safety, we initialize *every* CUDA device by default, which can be quite slow "
                "if you have a lot of GPUs.  If you know that you are only making use of a few "
                "CUDA devices, set the environment variable CUDA_VISIBLE_DEVICES or the "
                f"'{_devices_kw}' keyword argument of {_caller} with the set of devices you are "
                "actually using.  For example, if you are using CPU only, set "
                "CUDA_VISIBLE_DEVICES= or devices=[]; if you are using GPU 0 only, set "
                "CUDA_VISIBLE_DEVICES=0 or devices=[0].  To initialize all devices and suppress "
                f"this warning, set the '{_devices_kw}' keyword argument to "
                "`range(torch.cuda.device_count())`.")
            _fork_rng_warned_already = True
        devices = list(range(num_devices))
    else:
        devices = list(devices)  # a generator would be exhausted by the first pass
    cpu_state = get_rng_state()
    device_states = [cuda.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            cuda.set_rng_state(state, d)
