"""retorch.backends.cpu: which vector instruction set the CPU kernels run (as torch.backends.cpu)."""
from .. import _C

_CAPABILITY = {"scalar": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}


def get_cpu_capability():
    """The instruction set the hand-written kernels use now: "DEFAULT", "AVX2" or "AVX512"."""
    return _CAPABILITY[_C._get_cpu_isa()]


def supported_cpu_capability():
    """The highest instruction set this CPU supports."""
    return _CAPABILITY[_C._cpu_isa_supported()]


def set_cpu_capability(name):
    """Caps the instruction set ("DEFAULT"/"scalar", "AVX2", "AVX512"; case-insensitive) to run
    and compare the kernels' code paths on one machine; RETORCH_CPU_ISA sets it at start-up."""
    key = {"default": "scalar"}.get(name.lower(), name.lower())
    _C._set_cpu_isa(key)
