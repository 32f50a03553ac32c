"""retorch.jit.save / retorch.jit.load: traced and scripted programs reload in a fresh process."""
import os
import subprocess
import sys

import numpy as np
import pytest

import retorch
from retorch import jit, nn

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 5 * 5, 3)

    def forward(self, x):
        y = self.bn(self.conv(x)).relu()
        return self.fc(y.flatten(1))


def scripted_fn(x, n: int):
    for i in range(n):
        x = x * 0.5 + i
    return x.tanh()


def run_fresh(code):
    """Runs code in a new Python process (no Net class there) and returns its stdout."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_traced_module_reloads_in_a_fresh_process(tmp_path):
    retorch.manual_seed(0)
    net = Net().eval()
    x = retorch.randn(2, 1, 5, 5)
    traced = jit.trace(net, (x,))
    path = tmp_path / "net.rtjit"
    jit.save(traced, path)
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "want.npy", net(x).detach().numpy())
    code = f"""
import numpy as np, retorch
m = retorch.jit.load({str(path)!r})
x = retorch.from_numpy(np.load({str(tmp_path / 'x.npy')!r}))
np.testing.assert_allclose(m(x).detach().numpy(), np.load({str(tmp_path / 'want.npy')!r}),
                           rtol=1e-5, atol=1e-6)
print(sorted(n for n, _ in m.named_parameters()))
print("aten::conv2d" in str(m.graph))
"""
    out = run_fresh(code).splitlines()
    assert out[0] == str(sorted(n for n, _ in net.named_parameters()))
    assert out[1] == "True"


def test_loaded_module_trains(tmp_path):
    net = Net()
    traced = jit.trace(net, (retorch.randn(2, 1, 5, 5),))
    path = tmp_path / "net.rtjit"
    jit.save(traced, path)
    m = jit.load(path)
    x = retorch.randn(2, 1, 5, 5)
    m(x).sum().backward()
    net(x).sum().backward()
    grads = {n: p.grad.numpy() for n, p in m.named_parameters()}
    for n, p in net.named_parameters():
        np.testing.assert_allclose(grads[n], p.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_scripted_function_reloads(tmp_path):
    s = jit.script(scripted_fn)
    path = tmp_path / "fn.rtjit"
    jit.save(s, path)
    f = jit.load(path)
    x = retorch.randn(5)
    np.testing.assert_allclose(f(x, 3).numpy(), scripted_fn(x, 3).numpy(), rtol=1e-6)
    assert "prim::Loop" in str(f.graph)


def test_cli_prints_the_archive_graph(tmp_path):
    s = jit.script(scripted_fn)
    path = tmp_path / "fn.rtjit"
    jit.save(s, path)
    cli = os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "tools", "retorch")
    if not os.path.exists(cli):
        pytest.skip("the retorch CLI is not built")
    out = subprocess.run([cli, "ir", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == str(s.graph)


def test_bad_files_raise(tmp_path):
    bad = tmp_path / "bad.rtjit"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    with pytest.raises(RuntimeError):
        jit.load(bad)
    with pytest.raises(TypeError, match="expected a traced or scripted object"):
        jit.save(Net(), tmp_path / "x.rtjit")
