"""retorch.optim.lr_scheduler against torch.optim.lr_scheduler: lr (and momentum) sequences."""
import math

import pytest
import torch

import retorch

N_STEPS = 30


def _optimizers(opt_name="SGD", **kw):
    """A torch and a retorch optimizer with two groups (lr 0.1 and 0.02)."""
    kw = dict(kw) or (dict(momentum=0.9) if opt_name == "SGD" else {})
    t = [torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)]
    r = [retorch.zeros(2, requires_grad=True), retorch.zeros(3, requires_grad=True)]
    t_opt = getattr(torch.optim, opt_name)([{"params": t[:1]}, {"params": t[1:], "lr": 0.02}],
                                           lr=0.1, **kw)
    r_opt = getattr(retorch.optim, opt_name)([{"params": r[:1]}, {"params": r[1:], "lr": 0.02}],
                                             lr=0.1, **kw)
    return t_opt, r_opt


def _snapshot(opt, sched):
    groups = [dict((k, g[k]) for k in ("lr", "momentum", "betas") if k in g)
              for g in opt.param_groups]
    return sched.get_last_lr(), groups


def _assert_same(a, b, where):
    lrs_a, groups_a = a
    lrs_b, groups_b = b
    assert lrs_b == pytest.approx(lrs_a, rel=1e-12, abs=1e-15), where
    for ga, gb in zip(groups_a, groups_b):
        for k in ga:
            assert gb[k] == pytest.approx(ga[k], rel=1e-12, abs=1e-15), (where, k)


def _compare(make, opt_name="SGD", steps=N_STEPS, opt_kw=None):
    t_opt, r_opt = _optimizers(opt_name, **(opt_kw or {}))
    t_s = make(torch.optim, t_opt)
    r_s = make(retorch.optim, r_opt)
    _assert_same(_snapshot(t_opt, t_s), _snapshot(r_opt, r_s), "initial")
    for i in range(steps):
        t_opt.step()
        r_opt.step()
        t_s.step()
        r_s.step()
        _assert_same(_snapshot(t_opt, t_s), _snapshot(r_opt, r_s), "step %d" % i)
    assert r_s.last_epoch == t_s.last_epoch


SCHEDULES = {
    "StepLR": lambda m, o: m.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.lr_scheduler.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda m, o: m.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda m, o: m.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=1e-3),
    "CosineAnnealingLR-long": lambda m, o: m.lr_scheduler.CosineAnnealingLR(o, T_max=40),
    "LinearLR": lambda m, o: m.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=8),
    "LinearLR-decay": lambda m, o: m.lr_scheduler.LinearLR(o, start_factor=1.0, end_factor=0.1,
                                                           total_iters=20),
    "OneCycleLR-cos": lambda m, o: m.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=N_STEPS),
    "OneCycleLR-linear": lambda m, o: m.lr_scheduler.OneCycleLR(
        o, max_lr=[0.5, 0.05], total_steps=N_STEPS, anneal_strategy="linear", pct_start=0.4,
        div_factor=10.0, final_div_factor=100.0),
    "OneCycleLR-three-phase": lambda m, o: m.lr_scheduler.OneCycleLR(
        o, max_lr=0.3, epochs=3, steps_per_epoch=10, three_phase=True, base_momentum=0.8,
        max_momentum=0.9),
    "OneCycleLR-no-momentum": lambda m, o: m.lr_scheduler.OneCycleLR(
        o, max_lr=0.3, total_steps=N_STEPS, cycle_momentum=False),
    "SequentialLR-warmup-cosine": lambda m, o: m.lr_scheduler.SequentialLR(
        o, [m.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=5),
            m.lr_scheduler.CosineAnnealingLR(o, T_max=25)], milestones=[5]),
    "SequentialLR-three": lambda m, o: m.lr_scheduler.SequentialLR(
        o, [m.lr_scheduler.ExponentialLR(o, gamma=0.8),
            m.lr_scheduler.StepLR(o, step_size=4, gamma=0.5),
            m.lr_scheduler.MultiStepLR(o, milestones=[3, 6], gamma=0.1)], milestones=[6, 15]),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_matches_torch(name):
    _compare(SCHEDULES[name])


@pytest.mark.parametrize("name", ["OneCycleLR-cos", "OneCycleLR-three-phase"])
def test_one_cycle_cycles_adam_beta1(name):
    _compare(SCHEDULES[name], opt_name="Adam")


def test_one_cycle_cycles_rmsprop_momentum():
    _compare(SCHEDULES["OneCycleLR-linear"], opt_name="RMSprop", opt_kw=dict(momentum=0.5))


def test_one_cycle_errors():
    t_opt, r_opt = _optimizers("Adagrad", lr_decay=0.0)
    for m, o in ((torch.optim, t_opt), (retorch.optim, r_opt)):
        with pytest.raises(ValueError, match="must support momentum"):
            m.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=10)
    t_opt, r_opt = _optimizers()
    r_s = retorch.optim.lr_scheduler.OneCycleLR(r_opt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        r_s.step()
    with pytest.raises(ValueError, match="Tried to step 5 times"):
        r_s.step()
    with pytest.raises(ValueError, match="pct_start"):
        retorch.optim.lr_scheduler.OneCycleLR(r_opt, max_lr=0.1, total_steps=3, pct_start=1.5)


PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.5,
                   0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.4999, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
                   0.5, 0.5, 0.5]


@pytest.mark.parametrize("kw", [
    dict(patience=2),
    dict(patience=1, factor=0.5, cooldown=2, min_lr=[0.01, 0.001]),
    dict(mode="max", patience=1, threshold=0.05, threshold_mode="abs"),
    dict(patience=0, threshold=0.01, factor=0.2, min_lr=0.005, eps=1e-3),
])
def test_reduce_lr_on_plateau(kw):
    t_opt, r_opt = _optimizers()
    t_s = torch.optim.lr_scheduler.ReduceLROnPlateau(t_opt, **kw)
    r_s = retorch.optim.lr_scheduler.ReduceLROnPlateau(r_opt, **kw)
    for i, metric in enumerate(PLATEAU_METRICS):
        t_s.step(metric)
        r_s.step(retorch.tensor(metric, dtype=retorch.float64) if i % 2 else metric)
        t_lrs = [g["lr"] for g in t_opt.param_groups]
        assert r_s.get_last_lr() == pytest.approx(t_lrs, rel=1e-12), i
        assert r_s.num_bad_epochs == t_s.num_bad_epochs
        assert r_s.cooldown_counter == t_s.cooldown_counter
        assert r_s.best == t_s.best


def test_plateau_errors():
    _, r_opt = _optimizers()
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        retorch.optim.lr_scheduler.ReduceLROnPlateau(r_opt, factor=1.5)
    with pytest.raises(ValueError, match="mode middle is unknown"):
        retorch.optim.lr_scheduler.ReduceLROnPlateau(r_opt, mode="middle")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 3"):
        retorch.optim.lr_scheduler.ReduceLROnPlateau(r_opt, min_lr=[0, 0, 0])


def test_sequential_errors():
    _, r_opt = _optimizers()
    _, other = _optimizers()
    a = retorch.optim.lr_scheduler.ExponentialLR(r_opt, gamma=0.9)
    b = retorch.optim.lr_scheduler.ExponentialLR(other, gamma=0.9)
    with pytest.raises(ValueError, match="same optimizer"):
        retorch.optim.lr_scheduler.SequentialLR(r_opt, [a, b], milestones=[3])
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        retorch.optim.lr_scheduler.SequentialLR(r_opt, [a], milestones=[3])


def test_step_with_epoch_uses_closed_form():
    t_opt, r_opt = _optimizers()
    t_s = torch.optim.lr_scheduler.StepLR(t_opt, step_size=2, gamma=0.5)
    r_s = retorch.optim.lr_scheduler.StepLR(r_opt, step_size=2, gamma=0.5)
    with pytest.warns(UserWarning):
        t_s.step(7)
    with pytest.warns(UserWarning):
        r_s.step(7)
    assert r_s.get_last_lr() == pytest.approx(t_s.get_last_lr(), rel=1e-12)


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "OneCycleLR-cos",
                                  "SequentialLR-warmup-cosine"])
def test_scheduler_state_round_trip(name):
    make = SCHEDULES[name]
    _, opt_a = _optimizers()
    sched_a = make(retorch.optim, opt_a)
    for _ in range(7):
        opt_a.step()
        sched_a.step()
    opt_sd, sched_sd = opt_a.state_dict(), sched_a.state_dict()
    assert all(isinstance(v, retorch.Tensor) for v in sched_sd.values())
    _, opt_b = _optimizers()
    sched_b = make(retorch.optim, opt_b)
    opt_b.load_state_dict(opt_sd)
    sched_b.load_state_dict(sched_sd)
    for _ in range(10):
        for o, s in ((opt_a, sched_a), (opt_b, sched_b)):
            o.step()
            s.step()
        assert sched_b.get_last_lr() == sched_a.get_last_lr()
        assert [g["lr"] for g in opt_b.param_groups] == [g["lr"] for g in opt_a.param_groups]
        assert math.isclose(opt_b.param_groups[0]["momentum"], opt_a.param_groups[0]["momentum"])
