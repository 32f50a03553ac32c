"""optim.LBFGS: limited-memory BFGS over one flat vector of all parameters, with torch.optim.LBFGS's
semantics (closure-driven steps, fixed step or a strong Wolfe line search, state on the first
parameter, state_dict round trips)."""
from .. import _C
from ._py_optimizers import _PyOptimizer

__all__ = ["LBFGS"]

# Note [LBFGS scalars stay tensors]
# Dot products (ys, gtd, ro, al, H_diag) are 0-d tensors of the parameters' dtype, as in torch, so
# a float32 problem rounds where torch rounds; only the loss is a Python float. Mixed expressions
# (f + c1 * t * gtd) promote to the tensor's dtype, and comparisons give 0-d bool tensors that
# `if` reads through __bool__.


def _cubic_minimizer(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimizer of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), clamped to
    `bounds` (default: the interval between x1 and x2); the midpoint when the cubic has none."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 ** 2 - g1 * g2
    if not disc >= 0:
        return (lo + hi) / 2.
    d2 = disc.sqrt() if isinstance(disc, _C.Tensor) else disc ** 0.5
    # Measured from the right-hand point of the pair, which keeps the division well scaled.
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


class _Point:
    """A trial step t along the direction: loss f, flat gradient g, directional slope gtd."""
    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Line search for a step t along d meeting the strong Wolfe conditions (sufficient decrease
    c1, curvature c2). evaluate(t) -> (loss, flat_grad) with the parameters left unchanged.
    Returns (loss, flat_grad, t, evaluations)."""
    d_norm = d.abs().max()
    start = _Point(0, f, g.clone(), gtd)

    def trial(step):
        loss, grad = evaluate(step)
        return _Point(step, loss, grad, grad.dot(d))

    def sufficient_decrease(p):
        return not p.f > (f + c1 * p.t * gtd)

    def curvature_ok(p):
        return abs(p.gtd) <= -c2 * gtd

    # Bracketing: grow t until an interval [prev, new] must hold an acceptable point, or new is
    # acceptable itself. Each pass evaluates one point; `evals` counts them.
    prev, new = start, trial(t)
    evals, iters = 1, 0
    bracket, done = None, False
    while iters < max_ls:
        if not sufficient_decrease(new) or (iters > 1 and new.f >= prev.f):
            bracket = [prev, new]
            break
        if curvature_ok(new):
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [prev, new]
            break
        # The minimizer is further out: extrapolate within [t + 1% of the last move, 10 t].
        step = _cubic_minimizer(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                                bounds=(new.t + 0.01 * (new.t - prev.t), new.t * 10))
        prev, new = new, trial(step)
        evals += 1
        iters += 1
    if iters == max_ls:
        bracket = [start, new]

    # Zoom: shrink the bracket by cubic interpolation until a point meets both conditions.
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    insufficient_progress = False
    while not done and iters < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        step = _cubic_minimizer(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        # A trial hugging an end of the bracket wastes an evaluation; when it does so twice in a
        # row, or lands outside, move it a tenth of the bracket inside instead.
        left, right = min(a.t, b.t), max(a.t, b.t)
        margin = 0.1 * (right - left)
        if min(right - step, step - left) < margin:
            if insufficient_progress or step >= right or step <= left:
                step = right - margin if abs(step - right) < abs(step - left) else left + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        p = trial(step)
        evals += 1
        iters += 1
        if not sufficient_decrease(p) or p.f >= bracket[low].f:
            bracket[high] = p
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if curvature_ok(p):
                done = True
            elif p.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = p
    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(_PyOptimizer):
    """torch.optim.LBFGS: one parameter group; step(closure) runs up to max_iter iterations."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError("LBFGS line_search_fn must be None or 'strong_wolfe', got " +
                             repr(line_search_fn))
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, param_group):
        if getattr(self, "param_groups", None):
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    # The flat vector: every parameter raveled and concatenated in group order.
    def _flat_grad(self):
        views = []
        for p in self._params:
            if p.grad is None:
                views.append(_C.zeros(p.numel(), dtype=p.dtype, device=p.device))
            else:
                views.append(p.grad.reshape(-1))
        return _C.cat(views, 0)  # a fresh tensor: later closures may zero the grads in place

    def _add_flat(self, step, direction):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(direction[offset:offset + n].view_as(p), alpha=step)
            offset += n

    def _evaluate_at(self, closure, x, t, d):
        """loss and flat gradient at x + t d; the parameters are put back to x."""
        self._add_flat(t, d)
        loss = float(closure())
        grad = self._flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, grad

    def step(self, closure=None):
        """Runs up to max_iter L-BFGS iterations; closure() re-evaluates the model (zeroing and
        filling the gradients) and returns the loss. Returns the first closure's loss."""
        if closure is None:
            raise TypeError("LBFGS.step() requires a closure: a function that clears the "
                            "gradients, computes the loss, calls backward() and returns the loss")
        from .. import no_grad
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        from ..autograd import enable_grad

        def eval_closure():
            with enable_grad():
                return closure()

        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        # LBFGS's state is global; torch keeps it on the first parameter, and so do we.
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = eval_closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # Direction: steepest descent first, then the two-loop recursion over the history.
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:  # keep only pairs with positive curvature
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1. / ys)
                    H_diag = ys / y.dot(y)
                d = self._two_loop(state, flat_grad, old_dirs, old_stps, ro, H_diag,
                                   history_size)
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss

            # Step length: the first ever step is scaled to the gradient's size.
            if state["n_iter"] == 1:
                t = min(1., 1. / flat_grad.abs().sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction any more
                break

            ls_evals = 0
            if group["line_search_fn"] is not None:
                if group["line_search_fn"] != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x = [p.clone() for p in self._params]
                loss, flat_grad, t, ls_evals = _strong_wolfe(
                    lambda step: self._evaluate_at(eval_closure, x, step, d),
                    t, d, loss, flat_grad, gtd)
                self._add_flat(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_flat(t, d)
                opt_cond = False
                # The last iteration does not re-evaluate: the next step's first closure will.
                if n_iter != max_iter:
                    loss = float(eval_closure())
                    flat_grad = self._flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            if n_iter == max_iter or evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change:  # the parameters stopped moving
                break
            if abs(loss - prev_loss) < tolerance_change:  # the loss stopped moving
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _two_loop(state, flat_grad, old_dirs, old_stps, ro, H_diag, history_size):
        """-H grad with H the L-BFGS inverse Hessian from the (s, y) history and H_diag * I.
        The alphas live in state["al"], as torch keeps them."""
        al = state.setdefault("al", [None] * history_size)
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        r = _C.mul(q, H_diag)
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        return r

    def state_dict(self):
        # A snapshot: the history lists grow and shrink in place on the next step.
        out = super().state_dict()
        for s in out["state"].values():
            for k, v in s.items():
                if isinstance(v, list):
                    s[k] = list(v)
        return out

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        for s in self.state.values():
            for k, v in s.items():
                if isinstance(v, list):
                    s[k] = [e.clone() if isinstance(e, _C.Tensor) else e for e in v]
