"""pytest setup for the PyTorch oracle suite: import paths and a per-test seeded numpy generator."""
import os
import sys
import zlib

import numpy as np
import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_PY = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "python")
for p in (_HERE, _PY):
    if p not in sys.path:
        sys.path.insert(0, p)


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the test id, so every failure reproduces."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
