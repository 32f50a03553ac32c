"""The orthogonal polynomials of torch.special (Chebyshev T/U/V/W and their shifted forms,
Hermite H/He, Laguerre L, Legendre P) at x for integer degree n, both tensors or one a number.
Each follows torch's kernel: the special values first, a trigonometric closed form inside the
interval for large n, else the three-term recurrence, run for all elements up to the largest n
(an element's value freezes once its own degree is reached)."""
from .. import _C
from ..autograd.grad_mode import no_grad
from ._common import any_true, binary_args, const, finish, select


def _degree(n):
    """static_cast<int64_t>(n): truncation; NaN and infinities become INT64_MIN (negative)."""
    return select(const(n, -1.0), _C.isfinite(n), _C.trunc(n))


def _even(n):
    return _C.fmod(n, 2.0) == 0


def _no_case(n):
    return _C.isnan(n)  # all False: _degree leaves no NaN


def _recurrence(n, first, step, skip):
    """P_n from P_0 = 1, P_1 = first and P_{k+1} = step(k, P_k, P_{k-1}) for k = 1..n-1, on
    the elements with n >= 2 that no earlier case in skip covers."""
    need = (n >= 2) & ~skip
    q = first
    if not any_true(need):
        return q
    p = const(n, 1.0)
    top = int(n[need].max().item())
    for k in range(1, top):
        r = step(k, q, p)
        live = need & (n > k)
        p, q = select(p, live, q), select(q, live, r)
    return q


def _chebyshev(x, n, kind, big_n):
    """T, U, V, W at y = x: torch's chebyshev_polynomial_{t,u,v,w}_forward."""
    n = _degree(n)
    inside = (n > big_n) & (_C.abs(x) < 1.0)
    edge = _C.abs(x) == 1.0
    theta = _C.acos(x)
    first = {"t": x, "u": x + x, "v": x + x - 1.0, "w": x + x + 1.0}[kind]
    rec = _recurrence(n, first, lambda k, q, p: (x + x) * q - p, inside | edge)
    r = select(rec, n == 1, first)
    r = select(r, n == 0, 1.0)
    if kind == "t":
        closed = _C.cos(n * theta)
        at_edge = select(const(x, -1.0), (x > 0) | _even(n), 1.0)
    elif kind == "u":
        s = _C.sin(theta)
        closed = select((n + 1) * _C.cos((n + 1) * theta) / x, s != 0,
                        _C.sin((n + 1) * theta) / s)
        at_edge = select(-(n + 1), (x > 0) | _even(n), n + 1)
    elif kind == "v":
        odd_edge = select(-(n + n + 1), _even(n), n + n + 1)
        closed = select(odd_edge, _C.sin(theta / 2.0) != 1.0,
                        _C.cos((n + 0.5) * theta) / _C.cos(theta / 2.0))
        at_edge = select(odd_edge, x > 0, 1.0)
    else:
        sign = select(const(x, -1.0), _even(n), 1.0)
        closed = select(select(sign, x > 0, n + n + 1), _C.cos(theta / 2.0) != 1.0,
                        _C.sin((n + 0.5) * theta) / _C.sin(theta / 2.0))
        at_edge = select(sign, x > 0, n + n + 1)
    r = select(r, inside, closed)
    r = select(r, edge, at_edge)
    return select(r, n < 0, 0.0)


def _shifted_chebyshev(x, n, kind, big_n):
    """T*, U*, V*, W* (the Chebyshev polynomials of 2x - 1), special-casing x = 0 and 1."""
    n = _degree(n)
    u = x + x - 1.0
    inside = (n > big_n) & (_C.abs(u) < 1.0)
    edge = (x == 1.0) | (x == 0.0)
    theta = _C.acos(u)
    first = {"t": u, "u": u + u, "v": u + u - 1.0, "w": u + u + 1.0}[kind]
    rec = _recurrence(n, first, lambda k, q, p: (u + u) * q - p, inside | edge)
    r = select(rec, n == 1, first)
    r = select(r, n == 0, 1.0)
    even = _even(n)
    if kind == "t":
        closed = _C.cos(n * theta)
        at_one, at_zero = const(x, 1.0), select(const(x, -1.0), even, 1.0)
    elif kind == "u":
        s = _C.sin(theta)
        closed = select((n + 1) * _C.cos((n + 1) * theta) / u, s != 0,
                        _C.sin((n + 1) * theta) / s)
        at_one, at_zero = n + 1, select(-(n + 1), even, n + 1)
    elif kind == "v":
        at_zero = select(-(n + n + 1), even, n + n + 1)
        closed = select(at_zero, _C.sin(theta / 2.0) != 1.0,
                        _C.cos((n + 0.5) * theta) / _C.cos(theta / 2.0))
        at_one = const(x, 1.0)
    else:
        at_zero = select(const(x, -1.0), even, 1.0)
        closed = select(at_zero, _C.cos(theta / 2.0) != 1.0,
                        _C.sin((n + 0.5) * theta) / _C.sin(theta / 2.0))
        at_one = n + n + 1
    r = select(r, inside, closed)
    r = select(r, x == 0.0, at_zero)
    r = select(r, x == 1.0, at_one)
    return select(r, n < 0, 0.0)


def _hermite_h(x, n):
    n = _degree(n)
    # torch steps k = 2, 4, ..., 2n - 2: H_{j+1} = 2x H_j - 2j H_{j-1}.
    rec = _recurrence(n, x + x, lambda k, q, p: (x + x) * q - (2 * k) * p, _no_case(n))
    r = select(select(rec, n == 1, x + x), n == 0, 1.0)
    return select(r, n < 0, 0.0)


def _hermite_he(x, n):
    n = _degree(n)
    rec = _recurrence(n, x, lambda k, q, p: x * q - k * p, _no_case(n))
    r = select(select(rec, n == 1, x), n == 0, 1.0)
    return select(r, n < 0, 0.0)


def _laguerre_l(x, n):
    n = _degree(n)
    zero = _C.abs(x) == 0.0
    rec = _recurrence(n, 1.0 - x, lambda k, q, p: (((k + k) + (1.0 - x)) * q - k * p) / (k + 1),
                      zero)
    r = select(select(rec, n == 1, 1.0 - x), n == 0, 1.0)
    r = select(r, zero, 1.0)
    return select(r, n < 0, 0.0)


def _legendre_p(x, n):
    n = _degree(n)
    edge = _C.abs(x) == 1.0
    rec = _recurrence(n, x, lambda k, q, p: ((k + k + 1) * x * q - k * p) / (k + 1), edge)
    r = select(select(rec, n == 1, x), n == 0, 1.0)
    r = select(r, edge, select(const(x, -1.0), (x > 0) | _even(n), 1.0))
    return select(r, n < 0, 0.0)


def _polynomial(name, kernel):
    op = "special_" + name

    def fn(input, n, *, out=None):
        x, deg = binary_args(op, input, n)
        # In the input's dtype, as torch: a float32 recurrence overflows (to inf, then NaN)
        # where torch's does. torch does not differentiate these.
        with no_grad():
            return finish(kernel(x.contiguous(), deg.contiguous()), out)
    fn.__name__ = name
    return fn


chebyshev_polynomial_t = _polynomial(
    "chebyshev_polynomial_t", lambda x, n: _chebyshev(x, n, "t", 6))
chebyshev_polynomial_u = _polynomial(
    "chebyshev_polynomial_u", lambda x, n: _chebyshev(x, n, "u", 8))
chebyshev_polynomial_v = _polynomial(
    "chebyshev_polynomial_v", lambda x, n: _chebyshev(x, n, "v", 8))
chebyshev_polynomial_w = _polynomial(
    "chebyshev_polynomial_w", lambda x, n: _chebyshev(x, n, "w", 8))
shifted_chebyshev_polynomial_t = _polynomial(
    "shifted_chebyshev_polynomial_t", lambda x, n: _shifted_chebyshev(x, n, "t", 6))
shifted_chebyshev_polynomial_u = _polynomial(
    "shifted_chebyshev_polynomial_u", lambda x, n: _shifted_chebyshev(x, n, "u", 6))
shifted_chebyshev_polynomial_v = _polynomial(
    "shifted_chebyshev_polynomial_v", lambda x, n: _shifted_chebyshev(x, n, "v", 6))
shifted_chebyshev_polynomial_w = _polynomial(
    "shifted_chebyshev_polynomial_w", lambda x, n: _shifted_chebyshev(x, n, "w", 4))
hermite_polynomial_h = _polynomial("hermite_polynomial_h", _hermite_h)
hermite_polynomial_he = _polynomial("hermite_polynomial_he", _hermite_he)
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _laguerre_l)
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _legendre_p)

