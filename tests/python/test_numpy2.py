"""The Python module against numpy 2 (scripts/setup.sh installs it into .deps/numpy2; the rest of
the suite keeps Debian's numpy 1.24, which Debian's torch needs): arrays of every dtype
from_numpy takes go in and come back out. pybind11 before 2.12 misread numpy 2's dtypes and
refused them all."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUMPY2 = os.path.join(ROOT, ".deps", "numpy2")

CHECK = r"""
import numpy as np
import retorch
assert np.__version__.startswith("2."), np.__version__
for dt in ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dt)
    for t in (retorch.from_numpy(a), retorch.tensor(a), retorch.as_tensor(a)):
        back = t.numpy()
        assert back.dtype == a.dtype and (back == a).all(), (dt, back)
x = np.random.default_rng(0).standard_normal((5, 6))
assert abs(retorch.tensor(x).sum().item() - x.sum()) < 1e-12
assert (retorch.tensor(x[:, ::2]).numpy() == x[:, ::2]).all()  # a strided view
"""


@pytest.mark.skipif(not os.path.isdir(NUMPY2), reason="scripts/setup.sh installs numpy 2")
def test_arrays_of_numpy2_go_in_and_come_out():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([NUMPY2, os.path.join(ROOT, "python")]))
    r = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
