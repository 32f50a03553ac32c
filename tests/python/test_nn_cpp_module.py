"""C++ nn::Modules used from Python (nn.CppModule): they mix with Python modules, train with
retorch.optim, and follow state dicts, .to() and train/eval — checked against the same model
built from Python layers (themselves checked against torch in test_nn_python.py)."""
import numpy as np
import pytest

import retorch
import retorch.nn as nn


def cpp_features():
    return nn.cpp_layer("Sequential", nn.cpp_layer("Conv2d", 1, 4, 3, 1, 1),
                        nn.cpp_layer("BatchNorm2d", 4), nn.cpp_layer("ReLU"),
                        nn.cpp_layer("MaxPool2d", 2), nn.cpp_layer("Flatten"))


def py_features():
    return nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten())


class Net(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.features = features
        self.head = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        return self.head(self.features(x))


def pair():
    c, p = Net(cpp_features()), Net(py_features())
    assert list(c.state_dict()) == list(p.state_dict())
    p.load_state_dict(c.state_dict())
    return c, p


def test_mixed_model_trains_like_python_layers(rng):
    c, p = pair()
    oc = retorch.optim.SGD(c.parameters(), lr=0.1, momentum=0.9)
    op = retorch.optim.SGD(p.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        x = retorch.from_numpy(rng.standard_normal((6, 1, 6, 6)).astype(np.float32))
        y = retorch.from_numpy(rng.integers(0, 5, 6))
        losses = []
        for m, o in ((c, oc), (p, op)):
            o.zero_grad()
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            o.step()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) < 1e-5
    for (k, a), (_, b) in zip(c.state_dict().items(), p.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


def test_parameters_are_the_cpp_tensors():
    c = nn.cpp_layer("Linear", 3, 2)
    assert isinstance(c.weight, nn.Parameter) and c.weight.requires_grad
    with retorch.no_grad():
        c.weight.zero_()
        c.bias.fill_(1.5)
    np.testing.assert_allclose(c(retorch.ones(1, 3)).detach().numpy(), [[1.5, 1.5]])
    c.load_state_dict({"weight": retorch.ones(2, 3), "bias": retorch.zeros(2)})
    np.testing.assert_allclose(c(retorch.ones(1, 3)).detach().numpy(), [[3.0, 3.0]])
    with pytest.raises(AttributeError):
        c.weight = nn.Parameter(retorch.zeros(2, 3))


def test_eval_and_dtype_reach_cpp(rng):
    c, p = pair()
    x = retorch.from_numpy(rng.standard_normal((4, 1, 6, 6)).astype(np.float32))
    c(x), p(x)  # one training step of the running stats
    c.eval(), p.eval()
    assert not c.features._cpp.training
    np.testing.assert_allclose(c(x).detach().numpy(), p(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    c.double()
    assert c.features[0].weight.dtype == retorch.float64
    assert c.features[1].running_mean.dtype == retorch.float64
    assert c(x.double()).dtype == retorch.float64


def test_hooks_and_errors_from_cpp():
    c = nn.cpp_layer("Linear", 3, 2)
    seen = []
    c.register_forward_hook(lambda m, a, out: seen.append(tuple(out.shape)))
    c(retorch.ones(4, 3))
    assert seen == [(4, 2)]
    with pytest.raises(RuntimeError):
        c(retorch.ones(4, 5))          # the C++ shape check surfaces as RuntimeError
    with pytest.raises(ValueError):
        nn.cpp_layer("NoSuchLayer")
    assert "retorch::nn::Linear" in repr(c)
