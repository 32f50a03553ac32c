"""Fits the float32 rational forms of Note [Rational tanh] (retorch/backend/cpu/VecMath.h).

f(x) ~ x * P(x^2) / Q(x^2) on [0, X] for f = tanh or erf, least maximum relative error by
iteratively reweighted least squares (Lawson's weights on the linearized problem), with Q(0) = 1
and P(0) pinned to the float nearest f'(0). Prints the error in exact arithmetic and the
coefficients as float literals, lowest degree first. Needs numpy and mpmath (Debian's
python3-numpy, python3-mpmath); a development tool, not used by the build or the tests.

    /usr/bin/python3 tools/mathfit/fit_odd_rational.py tanh 5 4 9.010914
    /usr/bin/python3 tools/mathfit/fit_odd_rational.py erf 5 5 3.919206

X is the smallest float whose f rounds to 1 (the kernels return exactly +-1 from there on).
"""
import sys

import mpmath as mp
import numpy as np


def fit(name, m, n, top, iterations=300):
    mp.mp.dps = 40
    fn = {"erf": mp.erf, "tanh": mp.tanh}[name]
    k = 6000
    cheb = np.cos(np.pi * (np.arange(k) + 0.5) / k) * 0.5 + 0.5
    x = np.sort(np.concatenate([cheb * top, np.linspace(1e-4, top, k)]))
    f = np.array([float(fn(mp.mpf(v)) / mp.mpf(v)) for v in x])
    p0 = float(np.float32(float(mp.diff(fn, 0))))
    u = x * x / (top * top)  # scaled for conditioning; undone when printing
    w, q_prev = np.ones_like(x), np.ones_like(x)
    for _ in range(iterations):
        a = np.hstack([np.vstack([u**j for j in range(1, m + 1)]).T,
                       -f[:, None] * np.vstack([u**j for j in range(1, n + 1)]).T])
        sw = np.sqrt(w) / (q_prev * f)
        c, *_ = np.linalg.lstsq(a * sw[:, None], (f - p0) * sw, rcond=None)
        p = np.concatenate([[p0], c[:m]])
        q = np.concatenate([[1.0], c[m:]])
        pu = sum(p[j] * u**j for j in range(m + 1))
        q_prev = sum(q[j] * u**j for j in range(n + 1))
        err = (pu / q_prev - f) / f
        w = w * (np.abs(err) + 1e-300)
        w /= w.sum()
    scale = [(top * top) ** j for j in range(max(m, n) + 1)]
    return (np.max(np.abs(err)), [np.float32(p[j] / scale[j]) for j in range(m + 1)],
            [np.float32(q[j] / scale[j]) for j in range(n + 1)])


def main():
    name, m, n, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    err, p, q = fit(name, m, n, top)
    print(f"{name}: max relative error {err:.3e} in exact arithmetic")
    print("P:", ", ".join(str(c) + "f" for c in p))
    print("Q:", ", ".join(str(c) + "f" for c in q))


if __name__ == "__main__":
    main()
