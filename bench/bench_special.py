"""torch.special against PyTorch in the same run: the Bessel family, the orthogonal polynomials
(degree 3 and 50) and the other special functions on 256K float32 elements, 2 threads, best of
5; ratio = retorch time / torch time (below 1: retorch is faster). Arguments name the functions
to run (`bench_special.py i0e legendre_polynomial_p`); none runs them all."""
import sys
import time

import numpy as np
import torch

import retorch

N = 256 * 1024
UNARY = ["i0", "i0e", "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1",
         "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
         "scaled_modified_bessel_k1", "bessel_j0", "bessel_y1", "spherical_bessel_j0", "airy_ai",
         "ndtr", "ndtri", "log_ndtr", "erfcx", "entr"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "shifted_chebyshev_polynomial_t",
               "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
               "legendre_polynomial_p"]


def best_ms(f, reps=5):
    f()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def cases(L):
    rng = np.random.default_rng(0)
    pos = L.from_numpy(rng.uniform(0.1, 5.1, N).astype(np.float32))  # K and Y need x > 0
    unit = L.from_numpy(rng.uniform(-1, 1, N).astype(np.float32))
    prob = L.from_numpy(rng.uniform(0.01, 0.99, N).astype(np.float32))
    c = {}
    for name in UNARY:
        x = prob if name == "ndtri" else pos
        c[name] = (name, lambda f=getattr(L.special, name), x=x: f(x))
    for name in POLYNOMIALS:
        for n in (3, 50):
            c[f"{name}(x, {n})"] = (name, lambda f=getattr(L.special, name), n=n: f(unit, n))
    return c


def main():
    torch.set_num_threads(retorch.get_num_threads())
    only = sys.argv[1:]
    rt, pt = cases(retorch), cases(torch)
    print(f"torch.special, {N} float32, {torch.get_num_threads()} threads, vs torch "
          f"{torch.__version__}")
    print(f"{'case':34s} {'retorch':>10s} {'torch':>10s}  ratio")
    for key, (name, f) in rt.items():
        if only and name not in only:
            continue
        r, t = best_ms(f), best_ms(pt[key][1])
        print(f"{key:34s} {r:7.3f} ms {t:7.3f} ms  {r / t:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
