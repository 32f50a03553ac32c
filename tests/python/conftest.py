"""pytest setup for the PyTorch oracle suite: import paths (incl. .deps/python) and a seeded rng."""
import os
import sys
import zlib

import numpy as np
import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
_PY = os.path.join(_ROOT, "python")
# Test-only packages scripts/setup.sh installs into the project (tensorboard's event reader).
_DEPS = os.path.join(_ROOT, ".deps", "python")
for p in (_HERE, _PY) + ((_DEPS,) if os.path.isdir(_DEPS) else ()):
    if p not in sys.path:
        sys.path.insert(0, p)


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the test id, so every failure reproduces."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(params=["DEFAULT", "AVX2", "AVX512"])
def each_cpu_isa(request):
    """Runs a test once per vector instruction set the CPU has (retorch.backends.cpu), so the
    scalar, AVX2 and AVX-512 paths of the kernels are all checked on one machine."""
    from custom_helpers import cpu_isa, supported_isas
    if request.param not in supported_isas():
        pytest.skip(f"this CPU has no {request.param}")
    with cpu_isa(request.param) as name:
        yield name
