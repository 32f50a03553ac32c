"""The Hurwitz zeta function: a vectorized port of torch's Cephes kernel (direct sum, then the
Euler-Maclaurin tail), whose loop stops when every element has converged. (The incomplete
gamma functions are the igamma and igammac ops.)"""
import math

from .. import _C
from ..autograd.function import Function
from ._common import MACHEP, any_true, binary_args, const, finish, in_float64, not_implemented, \
    on_subset, select

# Euler-Maclaurin: (2k)! / B_2k, the denominators of the tail correction terms.
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta_series(x, q):
    """Cephes zeta for x > 1: direct sum until q + i > 9 (at least 9 terms), then the
    Euler-Maclaurin tail; an element stops as soon as a term falls below MACHEP of the sum."""
    s = _C.pow(q, -x)
    a = q
    b = const(q, 0.0)
    done = const(q, 0.0) > 0
    looping = ~done
    for _ in range(9):  # the first 9 terms, whatever a is
        if not any_true(looping):
            break
        cont = looping
        a = select(a, cont, a + 1.0)
        term = _C.pow(a, -x)
        b = select(b, cont, term)
        s = select(s, cont, s + term)
        early = cont & (-MACHEP * s < b) & (b < MACHEP * s)
        done = done | early
        looping = cont & ~early
    rest = looping & (a <= 9.0)  # then on while a <= 9: ~9 - q terms for a negative q
    if any_true(rest):
        idx = rest.nonzero().reshape(-1)
        a_r, s_r, b_r, early_r = _zeta_rest(x[idx], a[idx], s[idx], b[idx])
        a, s, b = a.index_put((idx,), a_r), s.index_put((idx,), s_r), b.index_put((idx,), b_r)
        done = done.index_put((idx,), early_r)
    active = ~done
    w = a
    s = select(s, active, s + b * w / (x - 1.0) - 0.5 * b)
    fac = const(q, 1.0)
    k = 0.0
    for coef in _ZETA_A:
        if not any_true(active):
            break
        fac = fac * (x + k)
        b = b / w
        t = fac * b / coef
        s_new = s + t
        s = select(s, active, s_new)
        active = active & ~(_C.abs(t / s_new) < MACHEP)
        k += 1.0
        fac = fac * (x + k)
        b = b / w
        k += 1.0
    return s


def _zeta_rest(x, a, s, b, chunk=256):
    """The direct sum's terms after the first 9, for 1-D x, a, s, b whose a <= 9: Cephes adds
    (a + 1)^-x, (a + 2)^-x, ... while a <= 9 or until a term falls below MACHEP of the sum.
    A negative q takes ~9 - q terms, so they go `chunk` at a time per element, a and s as
    running sums (cumsum adds in order, so each value rounds as Cephes' a += 1, s += b do).
    Returns the final a, s, b and whether each stopped early."""
    early = const(a, 0.0) > 0
    out_a, out_s, out_b = a, s, b
    live = _C.arange(a.shape[0])
    ones = _C.ones([a.shape[0], chunk], dtype=a.dtype)
    steps = _C.arange(1, chunk + 1).reshape(1, chunk)
    while live.shape[0]:
        n = live.shape[0]
        A = _C.cat([a.reshape(n, 1), ones[:n]], 1).cumsum(1)  # a before each step, then after
        B = _C.pow(A[:, 1:], -x.reshape(n, 1))
        S = _C.cat([s.reshape(n, 1), B], 1).cumsum(1)[:, 1:]
        runs = A[:, :-1] <= 9.0  # the steps taken (a prefix: a only grows)
        small = runs & (-MACHEP * S < B) & (B < MACHEP * S)
        # the step each element stops at in this chunk: its first small term, else its last
        first_small = _C.where(small, steps, chunk + 1).amin(1)
        stop = _C.minimum(first_small, runs.sum(1))
        ends = (first_small <= chunk) | (A[:, -1] > 9.0)
        at = (stop - 1).reshape(n, 1)
        fin = live[ends]
        out_a = out_a.index_put((fin,), A[:, 1:].gather(1, at).reshape(n)[ends])
        out_s = out_s.index_put((fin,), S.gather(1, at).reshape(n)[ends])
        out_b = out_b.index_put((fin,), B.gather(1, at).reshape(n)[ends])
        early = early.index_put((fin,), (first_small <= stop)[ends])
        go = ~ends
        live, x, a, s = live[go], x[go], A[:, -1][go], S[:, -1][go]
    return out_a, out_s, out_b, early


def _zeta(x, q):
    x, q = x.contiguous(), q.contiguous()
    pole = (x == 1) | ((q <= 0) & (q == _C.floor(q)))
    nan = (x < 1) | ((q <= 0) & (x != _C.floor(x)))
    out = const(x, math.nan)
    on_subset(out, ~pole & ~nan, _zeta_series, x, q)
    # torch tests x == 1, then x < 1, then the poles of q.
    out = select(select(out, (q <= 0) & (q == _C.floor(q)), math.inf), x < 1, math.nan)
    return select(out, x == 1, math.inf)


class _Zeta(Function):
    _backward_name = "SpecialZetaBackward0"

    @staticmethod
    def forward(ctx, x, q):
        ctx.save_for_backward(x, q)
        return in_float64(_zeta, x, q)

    @staticmethod
    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            raise not_implemented("zeta")
        x, q = ctx.saved_tensors
        return None, grad * -x * zeta(x + 1.0, q)


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function sum_k (other + k)^-input."""
    return finish(_Zeta.apply(*binary_args("special_zeta", input, other)), out)
