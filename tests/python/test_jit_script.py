"""retorch.jit.script: the straight-line/if/for subset of Python compiled from its AST to the IR."""
import numpy as np
import pytest
import torch

import retorch
import retorch.nn.functional as F
from retorch import jit


def _rt(a):
    return retorch.tensor(a)


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def straight(x, y):
    z = x * 2 + y
    return retorch.tanh(z) - z.sigmoid() / 3.0


def branchy(x):
    if x.sum() > 0:
        y = x.relu()
    else:
        y = -x
    return y * 2


def loop(x, n: int):
    acc = x
    for i in range(n):
        acc = acc * 0.5 + i
    return acc


def with_kwargs(x):
    return F.softmax(x, dim=1) + retorch.sum(x, dim=[0], keepdim=True)


def two_results(x):
    a = x + 1
    b = x.exp()
    return a, b


def scalar_math(x, k: int):
    j = k * 2 + 1
    if j > 4:
        x = x + j
    return x


@pytest.mark.parametrize("fn,args", [
    (straight, lambda: [_rt(np.random.randn(3, 4)), _rt(np.random.randn(3, 4))]),
    (branchy, lambda: [_rt(np.abs(np.random.randn(5)))]),
    (branchy, lambda: [_rt(-np.abs(np.random.randn(5)))]),
    (loop, lambda: [_rt(np.random.randn(4)), 3]),
    (loop, lambda: [_rt(np.random.randn(4)), 0]),
    (with_kwargs, lambda: [_rt(np.random.randn(3, 4))]),
    (scalar_math, lambda: [_rt(np.random.randn(2)), 1]),
    (scalar_math, lambda: [_rt(np.random.randn(2)), 3]),
])
def test_script_matches_eager(fn, args):
    a = args()
    scripted = jit.script(fn)
    got = scripted(*a)
    want = fn(*a)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        _close(got, want)


def test_script_matches_torch():
    x = np.random.randn(3, 4)
    y = np.random.randn(3, 4)
    got = jit.script(straight)(_rt(x), _rt(y))
    tx, ty = torch.tensor(x), torch.tensor(y)
    z = tx * 2 + ty
    want = torch.tanh(z) - z.sigmoid() / 3.0
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_script_graph_text():
    g = str(jit.script(branchy).graph)
    # FileCheck-style: these appear in this order.
    pos = 0
    for pattern in ["graph(%x : Tensor)", "aten::sum", "aten::gt", "prim::Bool", "prim::If",
                    "block0():", "aten::relu", "block1():", "aten::neg", "aten::mul",
                    "return ("]:
        i = g.find(pattern, pos)
        assert i >= 0, f"{pattern!r} not found after offset {pos} in\n{g}"
        pos = i
    assert "test_jit_script.py:" in g  # source locations point at this file


def test_script_loop_graph_and_gradients():
    s = jit.script(loop)
    assert "prim::Loop" in str(s.graph)
    x = _rt(np.random.randn(4)).requires_grad_()
    s(x, 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, 0.125))


def test_script_rejects_unsupported_code():
    def uses_while(x):
        while x.sum() > 0:
            x = x - 1
        return x

    with pytest.raises(RuntimeError, match=r"unsupported statement While .*test_jit_script.py:\d+"):
        jit.script(uses_while)

    def unknown_op(x):
        return retorch.no_such_op(x)

    with pytest.raises(RuntimeError, match="no operator no_such_op"):
        jit.script(unknown_op)

    def mismatched(x, c: bool):
        if c:
            y = x
        else:
            y = 1
        return y

    with pytest.raises(RuntimeError, match="'y' is Tensor in one branch and int in the other"):
        jit.script(mismatched)


def test_script_as_decorator():
    @jit.script
    def f(x):
        return x.relu() + 1

    x = _rt(np.array([-1.0, 2.0]))
    np.testing.assert_allclose(f(x).numpy(), [1.0, 3.0])


def test_passes_on_scripted_and_traced_programs():
    def dup(x):
        a = x * 2
        b = x * 2
        unused = x.exp()
        return a + b

    s = jit.script(dup)
    text = str(s.graph)
    assert text.count("aten::mul") == 2 and "aten::exp" in text
    x = _rt(np.random.randn(3))
    want = s(x)
    jit.run_passes(s, ["cse", "dce"])
    text = str(s.graph)
    assert text.count("aten::mul") == 1  # CHECK-COUNT-1: aten::mul
    assert "aten::exp" not in text       # CHECK-NOT: aten::exp
    _close(s(x), want)

    model = retorch.nn.Sequential(retorch.nn.Linear(4, 3), retorch.nn.ReLU()).eval()
    t = jit.trace(model, (_rt(np.random.randn(2, 4)).float(),))
    x = _rt(np.random.randn(2, 4)).float()
    want = t(x)
    jit.run_passes(t)  # the default pipeline
    jit.run_passes(t, ["decompose"])
    text = str(t.graph)
    assert "aten::linear" not in text and "aten::matmul" in text
    _close(t(x), want)
    with pytest.raises(RuntimeError, match="unknown pass 'nope'"):
        jit.run_passes(t, ["nope"])


@pytest.mark.parametrize("obj", [retorch.nn.Linear(2, 2), retorch.nn.Linear, 3])
def test_script_of_a_module_or_non_function_says_what_to_use(obj):
    """Only functions are scripted here: a module (torch scripts its forward) gets a clear
    NotImplementedError naming jit.trace, not a TypeError from deep inside inspect."""
    with pytest.raises(NotImplementedError, match="retorch.jit.trace"):
        retorch.jit.script(obj)
