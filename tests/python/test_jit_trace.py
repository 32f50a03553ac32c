"""retorch.jit.trace: traced functions and the example models replay like eager retorch and like
torch (outputs and gradients), their graphs hold the expected ops in order with source locations
in the user's file, and item() on a traced tensor gives a TracerWarning."""
import ast
import os
import re
import subprocess
import sys
import tempfile
import threading
import warnings

import numpy as np
import pytest
import torch

import retorch

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "examples")


def file_check(text, patterns):
    """Each pattern (a regex) must match after the previous one, like FileCheck's CHECK lines."""
    pos = 0
    for p in patterns:
        m = re.compile(p).search(text, pos)
        assert m, f"{p!r} not found after offset {pos} in:\n{text}"
        pos = m.end()


def load_example(name, lib):
    """The imports, constants and classes of examples/<name>.py (not its training loop), run
    against torch or retorch; compiled with the example's path so locations point there."""
    path = os.path.join(EXAMPLES, name + ".py")
    with open(path) as f:
        src = f.read()
    tree = ast.parse(src)
    keep = [n for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef))
            or (isinstance(n, ast.Assign) and isinstance(n.value, (ast.Constant, ast.BinOp)))]
    mod = ast.Module(body=keep, type_ignores=[])
    if lib == "retorch":
        for node in keep:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("torch"):
                        a.asname = a.asname or "torch"
                        a.name = "re" + a.name
    namespace = {"__name__": "example_" + name}
    exec(compile(mod, path, "exec"), namespace)
    return namespace, src.splitlines()


def line_of(lines, text):
    """1-based line number of the first source line containing text."""
    return next(i + 1 for i, l in enumerate(lines) if text in l)


def to_torch(model_r, model_t):
    state = {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in
             model_r.state_dict().items()}
    model_t.load_state_dict(state)


def grads(params):
    return [p.grad.detach().numpy().copy() for p in params]


def zero(params):
    for p in params:
        p.grad = None


def check_model(name, make, shape, patterns, tol=1e-4, composite=True):
    ns_r, lines = load_example(name, "retorch")
    ns_t, _ = load_example(name, "torch")
    retorch.manual_seed(0)
    model = make(ns_r)
    ref = make(ns_t)
    to_torch(model, ref)
    rng = np.random.RandomState(7)
    example = retorch.from_numpy(rng.rand(*shape).astype(np.float32))
    traced = retorch.jit.trace(model, (example,))
    text = str(traced.graph)
    assert text == traced.code
    file_check(text, patterns)
    if composite:  # linear is recorded once, not as the mm/addmm it calls
        assert "aten::mm" not in text and "aten::addmm" not in text

    x = rng.rand(*shape).astype(np.float32)
    params = list(model.parameters())
    assert [id(p) for p in traced.parameters()] == [id(p) for p in params]
    zero(params)
    eager = model(retorch.from_numpy(x))
    (eager * eager).sum().backward()
    g_eager = grads(params)
    zero(params)
    out = traced(retorch.from_numpy(x))
    (out * out).sum().backward()
    g_traced = grads(params)
    ref_out = ref(torch.from_numpy(x))
    (ref_out * ref_out).sum().backward()
    g_ref = [p.grad.numpy() for p in ref.parameters()]

    np.testing.assert_allclose(out.detach().numpy(), eager.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy(), rtol=tol, atol=tol)
    assert len(g_traced) == len(g_eager) == len(g_ref) > 0
    for a, b, c in zip(g_traced, g_eager, g_ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol)
    # The printed graph parses back to the same text, and the saved program reloads in a fresh
    # process (without the model's class) with the same outputs.
    assert str(retorch._C._jit._parse_ir(text)) == text
    check_reload_in_fresh_process(traced, x, out.detach().numpy())
    return text, lines


def check_reload_in_fresh_process(traced, x, want):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.rtjit")
        retorch.jit.save(traced, path)
        np.save(os.path.join(d, "x.npy"), x)
        np.save(os.path.join(d, "want.npy"), want)
        code = (
            "import numpy as np, retorch\n"
            f"m = retorch.jit.load({path!r})\n"
            f"x = retorch.from_numpy(np.load({os.path.join(d, 'x.npy')!r}))\n"
            "np.testing.assert_allclose(m(x).detach().numpy(), "
            f"np.load({os.path.join(d, 'want.npy')!r}), rtol=1e-5, atol=1e-6)\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                       "python"))
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr


def test_function_graph_text_and_replay():
    def f(x, y):
        return (x * 2 + y).relu()

    line = f.__code__.co_firstlineno + 1
    a, b = retorch.randn(2, 3), retorch.randn(2, 3)
    tf = retorch.jit.trace(f, (a, b))
    t = "Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)"
    loc = f" # {__file__}:{line}:0"
    assert str(tf.graph) == (
        f"graph(%x : {t},\n      %y : {t}):\n"
        f"  %2 : Long(requires_grad=0, device=cpu) = prim::Constant[value={{2}}](){loc}\n"
        f"  %3 : {t} = aten::mul(%x, %2){loc}\n"
        f"  %4 : int = prim::Constant[value=1](){loc}\n"
        f"  %5 : {t} = aten::add(%3, %y, %4){loc}\n"
        f"  %6 : {t} = aten::relu(%5){loc}\n"
        f"  return (%6)\n")
    x, y = np.random.rand(2, 3).astype(np.float32), np.random.rand(2, 3).astype(np.float32)
    got = tf(retorch.from_numpy(x), retorch.from_numpy(y))
    want = (torch.from_numpy(x) * 2 + torch.from_numpy(y)).relu()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_tuple_outputs_and_inplace():
    def f(x):
        y = x * 3
        y.add_(1)
        return y.relu(), y.view(-1)

    tf = retorch.jit.trace(f, retorch.randn(2, 2))
    file_check(str(tf.graph), [r"aten::mul\(%x", r"= aten::add_\(%", r"aten::relu", r"aten::view"])
    x = retorch.randn(2, 2)
    r, v = tf(x)
    er, ev = f(x)
    np.testing.assert_allclose(r.numpy(), er.numpy())
    np.testing.assert_allclose(v.numpy(), ev.numpy())


def test_feedforward_matches_eager_and_torch():
    text, lines = check_model(
        "feedforward", lambda ns: ns["NeuralNet"](20, 16, 5), (4, 20),
        [r'prim::GetAttr\[name="fc1.weight"\]\(%self\)', r"aten::linear\(%x, %fc1.weight, %fc1.bias\)",
         r"aten::relu", r"aten::linear\(.*%fc2.weight, %fc2.bias\)", r"return"])
    # Locations point at the example's own lines, not at retorch's modules.
    file_check(text, [re.escape(f"aten::linear(%x, %fc1.weight, %fc1.bias) # {EXAMPLES}/"
                                f"feedforward.py:{line_of(lines, 'out = self.fc1(x)')}:0")])
    assert "retorch/nn" not in text


def test_convnet_matches_eager_and_torch():
    check_model("convnet", lambda ns: ns["ConvNet"](10), (2, 1, 28, 28),
                [r"aten::conv2d\(%x, %layer1.0.weight", r"aten::batch_norm", r"aten::relu",
                 r"aten::max_pool2d", r"aten::conv2d", r"aten::batch_norm", r"aten::relu",
                 r"aten::max_pool2d", r"aten::reshape", r"aten::linear"])


def test_resnet_matches_eager_and_torch():
    text, _ = check_model(
        "resnet", lambda ns: ns["ResNet"](ns["ResidualBlock"], [1, 1, 1]), (2, 3, 32, 32),
        [r"aten::conv2d", r"aten::batch_norm", r"aten::relu_", r"aten::conv2d",
         r"aten::add_", r"aten::relu_", r"aten::avg_pool2d", r"aten::view", r"aten::linear"])


def test_lstm_matches_eager_and_torch():
    # The LSTM layer is C++ code that is not one op: its steps (addmm, sigmoid, ...) are traced.
    check_model("rnn_lstm", lambda ns: ns["RNN"](28, 16, 2, 10), (3, 28, 28),
                [r"aten::zeros", r"aten::zeros", r"aten::addmm\(%lstm.bias_hh_l0",
                 r"aten::sigmoid", r"aten::tanh", r"aten::select",
                 r"aten::linear\(.*%fc.weight, %fc.bias\)"], composite=False)


def test_item_gives_tracer_warning_and_freezes_value():
    def f(x):
        s = x.sum().item()
        return x * s

    with pytest.warns(retorch.jit.TracerWarning) as rec:
        tf = retorch.jit.trace(f, retorch.ones(3))
    assert len(rec) == 1
    assert rec[0].filename == __file__
    assert rec[0].lineno == f.__code__.co_firstlineno + 1
    # 3.0 was frozen into the graph.
    np.testing.assert_allclose(tf(retorch.full((3,), 2.0)).numpy(), [6.0, 6.0, 6.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        retorch.jit.trace(lambda x: x * 2, retorch.ones(2))  # no warning without item()
        # tolist() of a traced tensor warns too (as an error here).
        with pytest.raises(retorch.jit.TracerWarning):
            retorch.jit.trace(lambda x: x * float(len(x.tolist())), retorch.ones(2))


def test_concurrent_calls():
    m = retorch.nn.Sequential(retorch.nn.Linear(5, 8), retorch.nn.Tanh(), retorch.nn.Linear(8, 2))
    traced = retorch.jit.trace(m, retorch.randn(3, 5))
    xs = [retorch.randn(3, 5) for _ in range(6)]
    with retorch.no_grad():
        want = [m(x).numpy() for x in xs]
    errors = []

    def work(i):
        with retorch.no_grad():
            for _ in range(20):
                if not np.array_equal(traced(xs[i]).numpy(), want[i]):
                    errors.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_bad_inputs():
    with pytest.raises(TypeError, match="must return a tensor"):
        retorch.jit.trace(lambda x: 3, retorch.ones(2))
    with pytest.raises(TypeError, match="example input 0"):
        retorch.jit.trace(lambda x: x, (3,))
    tf = retorch.jit.trace(lambda x, y: x + y, (retorch.ones(2), retorch.ones(2)))
    with pytest.raises(RuntimeError, match="takes 2 inputs but 1 were given"):
        tf(retorch.ones(2))


def test_trace_through_a_traced_function_and_module():
    """A traced function or module called by the function being traced records its ops inline
    (it ran without the GIL, and the tracer's hooks crashed reaching Python from there)."""
    f = retorch.jit.trace(lambda x: x * 2 + 1, retorch.ones(3))
    lin = retorch.nn.Linear(3, 2).requires_grad_(False)  # (its weights become constants)
    m = retorch.jit.trace(lin, retorch.ones(1, 3))
    outer = retorch.jit.trace(lambda x: m(f(x).relu().unsqueeze(0)).sum(), retorch.ones(3))
    x = retorch.tensor([-1.0, 0.5, 2.0])
    want = lin((x * 2 + 1).relu().unsqueeze(0)).sum()
    assert abs(outer(x).item() - want.item()) < 1e-6
    kinds = str(outer.graph)
    assert "aten::relu" in kinds and "aten::mul" in kinds
