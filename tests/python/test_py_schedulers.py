"""The Python LR schedulers (optim/_py_schedulers.py) against torch's: the lr (and momentum)
each step leaves in every param group, over the same optimizer settings."""
import math

import pytest
import torch

import retorch


def run(lib, make_opt, make_sched, steps=25, momentum=False):
    params = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))]
    opt = make_opt(lib, params)
    sched = make_sched(lib, opt)
    seen = []
    for _ in range(steps):
        opt.step()
        sched.step()
        row = [g["lr"] for g in opt.param_groups] + sched.get_last_lr()
        if momentum:
            row += [g["momentum"] if "momentum" in g else g["betas"][0]
                    for g in opt.param_groups]
        seen.append(row)
    return seen


def sgd(lib, params):
    return lib.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=0.1,
                         momentum=0.9)


def adam(lib, params):
    return lib.optim.Adam(params, lr=0.01)


class Halve:
    """A callable object, whose state LambdaLR's state_dict keeps."""

    def __init__(self):
        self.k = 0.5

    def __call__(self, epoch):
        return self.k ** epoch


CASES = {
    "LambdaLR": (sgd, lambda lib, o: lib.optim.lr_scheduler.LambdaLR(o, lambda e: 0.95 ** e)),
    "LambdaLR per group": (sgd, lambda lib, o: lib.optim.lr_scheduler.LambdaLR(
        o, [lambda e: 1 / (e + 1), lambda e: math.cos(e / 10)])),
    "MultiplicativeLR": (sgd, lambda lib, o: lib.optim.lr_scheduler.MultiplicativeLR(
        o, lambda e: 0.9)),
    "ConstantLR": (sgd, lambda lib, o: lib.optim.lr_scheduler.ConstantLR(o, 0.25, 4)),
    "PolynomialLR": (adam, lambda lib, o: lib.optim.lr_scheduler.PolynomialLR(o, 10, 2.0)),
    "CosineAnnealingWarmRestarts": (sgd, lambda lib, o: lib.optim.lr_scheduler
                                    .CosineAnnealingWarmRestarts(o, 4, 2, 0.001)),
    "CyclicLR triangular": (sgd, lambda lib, o: lib.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=4)),
    "CyclicLR triangular2": (sgd, lambda lib, o: lib.optim.lr_scheduler.CyclicLR(
        o, [0.01, 0.02], 0.1, step_size_up=3, step_size_down=5, mode="triangular2")),
    "CyclicLR exp_range": (sgd, lambda lib, o: lib.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.9)),
    "CyclicLR adam": (adam, lambda lib, o: lib.optim.lr_scheduler.CyclicLR(
        o, 0.001, 0.01, step_size_up=5, cycle_momentum=False)),
    "ChainedScheduler": (sgd, lambda lib, o: lib.optim.lr_scheduler.ChainedScheduler([
        lib.optim.lr_scheduler.ConstantLR(o, 0.5, 3),
        lib.optim.lr_scheduler.ExponentialLR(o, 0.9)])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_lr_sequences_match_torch(case):
    make_opt, make_sched = CASES[case]
    momentum = case.startswith("CyclicLR") and "adam" not in case
    want = run(torch, make_opt, make_sched, momentum=momentum)
    got = run(retorch, make_opt, make_sched, momentum=momentum)
    for step, (g, w) in enumerate(zip(got, want)):
        assert g == pytest.approx(w, rel=1e-6, abs=1e-12), f"step {step}"


def test_lambda_state_dict_keeps_callable_objects_state():
    params = [retorch.nn.Parameter(retorch.zeros(2))]
    opt = retorch.optim.SGD(params, lr=1.0)
    f = Halve()
    s = retorch.optim.lr_scheduler.LambdaLR(opt, f)
    for _ in range(3):
        s.step()
    state = s.state_dict()
    f.k = 0.1
    s.load_state_dict(state)
    assert f.k == 0.5 and s.last_epoch == 3
    assert s.get_last_lr() == pytest.approx([0.125])


def test_cyclic_lr_cycles_adams_beta1_like_momentum():
    # torch 1.13 refuses Adam here; later torch cycles beta1, as retorch does.
    params = [retorch.nn.Parameter(retorch.zeros(2))]
    opt = retorch.optim.Adam(params, lr=0.01, betas=(0.9, 0.99))
    s = retorch.optim.lr_scheduler.CyclicLR(opt, 0.001, 0.01, step_size_up=4,
                                            base_momentum=0.8, max_momentum=0.9)
    assert opt.param_groups[0]["betas"] == pytest.approx((0.9, 0.99))
    for _ in range(4):
        s.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)  # the peak lr, the lowest beta1
    assert opt.param_groups[0]["betas"] == pytest.approx((0.8, 0.99))


def test_errors():
    params = [retorch.nn.Parameter(retorch.zeros(2))]
    with pytest.raises(TypeError, match="is not an Optimizer"):
        retorch.optim.lr_scheduler.LambdaLR(object(), lambda e: 1)
    opt = retorch.optim.SGD(params, lr=1.0)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas"):
        retorch.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1, lambda e: 2])
    with pytest.raises(ValueError, match="must support momentum"):
        retorch.optim.lr_scheduler.CyclicLR(retorch.optim.Adagrad(params, lr=0.1), 0.1, 1.0)
