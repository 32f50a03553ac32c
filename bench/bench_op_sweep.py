"""Op-by-op sweep: about a hundred pointwise ops, activations, reductions, copies and losses on
1M float32 elements (rows of 1024 for the row-wise ones), and random draws, factories, indexing
and shape ops of the same size, retorch against PyTorch in the same
run with the same thread count, slowest ratio first. It is how the long tail of slow kernels
(clamp, prod, amax, sqrt, transposed copies, the piecewise activations, softplus) was found;
ratio = retorch time / torch time, below 1 means retorch is faster. Arguments name the cases to
run (`bench_op_sweep.py fmod atan2`); none runs them all. NN-shaped ops (pools, shuffles, norms,
resampling, small losses) run on a [16, 32, 32, 32] image batch; "X backward" cases time X's
backward node alone (autograd.grad of a kept graph); "X step" cases one optimizer step."""
import sys
import time

import numpy as np
import torch

import retorch

N = 1 << 20
UNARY = ["abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
         "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
         "sigmoid", "erf", "erfc", "erfinv", "relu", "floor", "ceil", "round", "trunc", "frac",
         "sign", "square", "lgamma", "digamma", "sgn", "signbit", "isnan", "isfinite",
         "logical_not", "nan_to_num", "deg2rad", "rad2deg", "i0", "sinc", "logit", "asinh",
         "atanh"]
ACTIVATIONS = ["silu", "gelu", "mish", "elu", "selu", "celu", "softplus", "hardswish",
               "hardsigmoid", "hardtanh", "leaky_relu", "logsigmoid", "tanhshrink", "softsign",
               "relu6"]
BINARY = ["add", "sub", "mul", "div", "pow", "atan2", "maximum", "minimum", "fmod", "remainder",
          "eq", "lt", "ge", "hypot", "copysign", "xlogy", "logaddexp", "fmax"]


def best_ms(f, reps=40):
    f()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        best = min(best, (time.perf_counter() - t) / reps)
    return best * 1e3


def cases(L, a_np, b_np):
    """name -> zero-argument callable running the op with library L."""
    F = L.nn.functional
    a, b = L.from_numpy(a_np.copy()), L.from_numpy(b_np.copy())
    a2, b2 = a.reshape(1024, 1024), b.reshape(1024, 1024)
    ai, bi = (a * 100).to(L.int32), (b * 100).to(L.int32)
    c = {n: (lambda n=n: getattr(L, n)(a)) for n in UNARY}
    c.update({n: (lambda n=n: getattr(F, n)(a)) for n in ACTIVATIONS})
    c.update({n: (lambda n=n: getattr(L, n)(a, b)) for n in BINARY})
    c.update({
        "acosh": lambda: L.acosh(a + 1), "clamp": lambda: a.clamp(0.2, 0.7),
        "clamp_": lambda: a.clamp_(0.1, 0.9), "clamp(Tensor)": lambda: L.clamp(a, b * 0.5, b),
        "softmax(1)": lambda: L.softmax(a2, 1), "log_softmax(1)": lambda: L.log_softmax(a2, 1),
        "cumsum(1)": lambda: L.cumsum(a2, 1), "cumprod(1)": lambda: L.cumprod(a2, 1),
        "sum(1)": lambda: a2.sum(1), "mean(1)": lambda: a2.mean(1), "prod(1)": lambda: a2.prod(1),
        "amax(1)": lambda: a2.amax(1), "amin(1)": lambda: a2.amin(1), "amax(0)": lambda: a2.amax(0),
        "max(1)": lambda: a2.max(1), "argmax(1)": lambda: a2.argmax(1), "std(1)": lambda: a2.std(1),
        "norm(1)": lambda: a2.norm(dim=1), "inf-norm(1)": lambda: L.linalg.vector_norm(a2, float("inf"), [1]),
        "logsumexp(1)": lambda: a2.logsumexp(1), "sort(1)": lambda: a2.sort(1),
        "clone": lambda: a.clone(), "t().contiguous()": lambda: a2.t().contiguous(),
        "to(float16)": lambda: a.half(), "to(float64)": lambda: a.double(), "to(int32)": lambda: a.int(),
        "glu(1)": lambda: F.glu(a2, 1), "where": lambda: L.where(a > 0.5, a, b),
        "lerp": lambda: L.lerp(a, b, 0.3), "addcmul": lambda: L.addcmul(a, a, b),
        "floor_divide": lambda: L.floor_divide(a, b), "int32 &": lambda: ai & bi,
        "add row-broadcast": lambda: a2 + b2[0], "mul column-broadcast": lambda: a2 * b2[:, :1],
        "dist": lambda: L.dist(a, b), "dot": lambda: L.dot(a, b),
        "mse_loss": lambda: F.mse_loss(a, b), "l1_loss": lambda: F.l1_loss(a, b),
        "smooth_l1_loss": lambda: F.smooth_l1_loss(a, b),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(a, b),
        "kl_div": lambda: F.kl_div(a.log(), b, reduction="sum"),
        "cosine_similarity(1)": lambda: F.cosine_similarity(a2, b2),
        "igamma": lambda: L.igamma(a * 10, b * 10), "igammac": lambda: L.igammac(a * 10, b * 10),
        "special.bessel_j0": lambda: L.special.bessel_j0(a * 10),
        "special.bessel_y1": lambda: L.special.bessel_y1(a * 10),
        "special.ndtri": lambda: L.special.ndtri(a),
        "special.i0e": lambda: L.special.i0e(a * 10),
        "special.modified_bessel_k1": lambda: L.special.modified_bessel_k1(a * 10),
        "special.legendre_polynomial_p(5)": lambda: L.special.legendre_polynomial_p(a, 5),
    })
    c.update(index_and_random_cases(L, a, a2))
    c.update(nn_shaped_cases(L, a))
    c.update(backward_cases(L, a, b))
    c.update(optimizer_cases(L, a, b))
    return c


BACKWARD_UNARY = ["exp", "log", "sqrt", "rsqrt", "sin", "tanh", "sigmoid", "erf", "atan",
                  "reciprocal", "log1p", "abs"]
BACKWARD_ACTIVATIONS = ["relu", "silu", "gelu", "mish", "elu", "selu", "softplus", "hardswish",
                        "hardsigmoid", "hardtanh", "leaky_relu", "logsigmoid", "relu6"]


def backward_cases(L, a, b):
    """The backward node alone (autograd.grad of a kept graph) of unary ops, activations, binary
    ops, row ops and losses on 1M floats (added 2026-12-03: training runs these once for every
    forward, and their formulas are composites of primitives)."""
    F = L.nn.functional
    xa, xb = a.clone().requires_grad_(), b.clone().requires_grad_()
    a2, b2 = xa.view(1024, 1024), xb.view(1024, 1024)
    w, bias = xa[:1024], xb[:1024]
    labels = (b[:1024] * 1000).to(L.int64)
    graphs = {n: (lambda n=n: getattr(L, n)(xa), (xa,)) for n in BACKWARD_UNARY}
    graphs.update({n: (lambda n=n: getattr(F, n)(xa), (xa,)) for n in BACKWARD_ACTIVATIONS})
    graphs.update({
        "gelu tanh": (lambda: F.gelu(xa, approximate="tanh"), (xa,)),
        "pow 2.5": (lambda: xa.pow(2.5), (xa,)),
        "mul": (lambda: xa * xb, (xa, xb)), "div": (lambda: xa / xb, (xa, xb)),
        "pow": (lambda: xa.pow(xb), (xa, xb)), "maximum": (lambda: L.maximum(xa, xb), (xa, xb)),
        "add row-broadcast": (lambda: a2 + w, (xa, xa)),
        "softmax(1)": (lambda: L.softmax(a2, 1), (xa,)),
        "log_softmax(1)": (lambda: L.log_softmax(a2, 1), (xa,)),
        "layer_norm": (lambda: F.layer_norm(a2, [1024], w, bias), (xa, xb)),
        "sum(1)": (lambda: a2.sum(1), (xa,)), "mean(1)": (lambda: a2.mean(1), (xa,)),
        "amax(1)": (lambda: a2.amax(1), (xa,)), "norm(1)": (lambda: a2.norm(dim=1), (xa,)),
        "std(1)": (lambda: a2.std(1), (xa,)), "cumsum(1)": (lambda: a2.cumsum(1), (xa,)),
        "logsumexp(1)": (lambda: a2.logsumexp(1), (xa,)),
        "mse_loss": (lambda: F.mse_loss(xa, xb), (xa, xb)),
        "l1_loss": (lambda: F.l1_loss(xa, xb), (xa, xb)),
        "smooth_l1_loss": (lambda: F.smooth_l1_loss(xa, xb), (xa, xb)),
        "binary_cross_entropy": (lambda: F.binary_cross_entropy(xa, b), (xa,)),
        "bce_with_logits": (lambda: F.binary_cross_entropy_with_logits(xa, b), (xa,)),
        "cross_entropy [1024, 1024]": (lambda: F.cross_entropy(a2, labels), (xa,)),
        "dropout": (lambda: F.dropout(xa, 0.5, training=True), (xa,)),
        "t().contiguous()": (lambda: a2.t().contiguous(), (xa,)),
        "index_select": (lambda: a2.index_select(0, labels % 1024), (xa,)),
    })
    out = {}
    for name, (fn, inputs) in graphs.items():
        y = fn()
        g = L.ones_like(y) if y.dim() == 0 else L.from_numpy(
            np.random.default_rng(2).uniform(-1, 1, tuple(y.shape)).astype(np.float32))
        wrt = tuple(dict.fromkeys(inputs))  # "add row-broadcast" asks for one input's grad once
        out[name + " backward"] = (lambda y=y, g=g, wrt=wrt:
                                   L.autograd.grad(y, wrt, g, retain_graph=True))
    return out


def nn_shaped_cases(L, a):
    """Pools, shuffles, norms, resampling and small losses on a [16, 32, 32, 32] image batch (the
    first 512K elements of a), forward and some backwards (added 2026-11-25, when avg_pool2d,
    pixel_shuffle, einsum and nll_loss took 1.5-3.5x PyTorch's time)."""
    F = L.nn.functional
    x = a[:1 << 19].reshape(16, 32, 32, 32)
    xg = x.clone().requires_grad_()
    y2, y3, y7 = F.avg_pool2d(xg, 2), F.avg_pool2d(xg, 3, 1, 1), F.adaptive_avg_pool2d(xg, 7)
    g2, g3, g7 = L.ones_like(y2), L.ones_like(y3), L.ones_like(y7)
    wg, bg = L.ones(32).requires_grad_(), L.zeros(32).requires_grad_()
    yn = F.group_norm(xg, 4, wg, bg)  # (added 2026-12-03: 1.2-2.3x PyTorch's time before
    gn = x * 0.5                      # Note [Group norm kernels])
    m3 = a[:1 << 15].reshape(8, 64, 64)
    logits, labels = a[:1000].reshape(100, 10), (a[:100] * 10).to(L.int64)
    return {
        "avg_pool2d 2x2": lambda: F.avg_pool2d(x, 2),
        "avg_pool2d 3x3 s1 p1": lambda: F.avg_pool2d(x, 3, 1, 1),
        "avg_pool2d 2x2 backward": lambda: L.autograd.grad(y2, xg, g2, retain_graph=True),
        "avg_pool2d 3x3 backward": lambda: L.autograd.grad(y3, xg, g3, retain_graph=True),
        "max_pool2d 2x2": lambda: F.max_pool2d(x, 2),
        "adaptive_avg_pool2d 7": lambda: F.adaptive_avg_pool2d(x, 7),
        "adaptive_avg_pool2d 7 backward": lambda: L.autograd.grad(y7, xg, g7, retain_graph=True),
        "pixel_shuffle": lambda: F.pixel_shuffle(x, 2),
        "pixel_unshuffle": lambda: F.pixel_unshuffle(x, 2),
        "interpolate nearest": lambda: F.interpolate(x, scale_factor=2, mode="nearest"),
        "interpolate bilinear": lambda: F.interpolate(x, scale_factor=2, mode="bilinear",
                                                      align_corners=False),
        "unfold 3x3": lambda: F.unfold(x, 3, padding=1),
        "group_norm(4)": lambda: F.group_norm(x, 4),
        "group_norm(4) affine backward": lambda: L.autograd.grad(yn, (xg, wg, bg), gn,
                                                                 retain_graph=True),
        "batch_norm train": lambda: F.batch_norm(x, None, None, training=True),
        "einsum bij,bjk": lambda: L.einsum("bij,bjk->bik", m3, m3),
        "nll_loss [100, 10]": lambda: F.nll_loss(logits, labels),
        "cross_entropy [100, 10]": lambda: F.cross_entropy(logits, labels),
    }


def optimizer_cases(L, a, b):
    """One optimizer step over a 1M-float parameter with a gradient (added 2026-12-03, when SGD
    with momentum, Adam, AdamW and RMSprop took 1.2-3.9x PyTorch's time: loops that stayed
    scalar); the first step, which makes the state, runs untimed."""
    out = {}
    for name, kw in [("SGD", dict(lr=0.01)), ("SGD momentum", dict(lr=0.01, momentum=0.9)),
                     ("Adam", dict(lr=1e-3)), ("Adam amsgrad", dict(lr=1e-3, amsgrad=True)),
                     ("AdamW", dict(lr=1e-3)), ("RMSprop", dict(lr=1e-3)),
                     ("RMSprop centered momentum", dict(lr=1e-3, centered=True, momentum=0.9)),
                     ("Adagrad", dict(lr=1e-2))]:
        p = a.clone().requires_grad_()
        p.grad = b.clone()
        opt = getattr(L.optim, name.split()[0])([p], **kw)
        opt.step()
        out[name + " step"] = opt.step
    return out


def index_and_random_cases(L, a, a2):
    """Random draws, factories, indexing and shape ops (added 2026-11-25, when gather, scatter_add,
    roll, flip, unique and randn took 5-50x PyTorch's time)."""
    F = L.nn.functional
    rng = np.random.default_rng(1)
    idx = L.from_numpy(rng.integers(0, N, N // 4))
    idx2 = L.from_numpy(rng.integers(0, 1024, (1024, 256)))
    small = L.from_numpy(rng.integers(0, 1024, 4096))
    rows = L.from_numpy(rng.permutation(1024)[:256])
    w = a.clone()  # (written by the in-place cases)
    w2 = w.view(1024, 1024)
    ints = (a * 100).to(L.int64)
    mask = a > 0.5
    return {
        "randn": lambda: L.randn(N), "rand": lambda: L.rand(N),
        "randint": lambda: L.randint(0, 100, (N,)), "randperm(64K)": lambda: L.randperm(65536),
        "bernoulli": lambda: L.bernoulli(a), "dropout": lambda: F.dropout(a, 0.5, training=True),
        "arange": lambda: L.arange(N), "linspace": lambda: L.linspace(0, 1, N),
        "index_select": lambda: L.index_select(a, 0, idx),
        "gather(1)": lambda: L.gather(a2, 1, idx2), "a[idx]": lambda: a[idx],
        "masked_select": lambda: a[mask], "nonzero": lambda: mask.nonzero(),
        "index_add_": lambda: L.zeros(N).index_add_(0, idx, a[:N // 4]),
        "scatter_add(1)": lambda: L.zeros(1024, 1024).scatter_add_(1, idx2, a2[:, :256]),
        "index_put_": lambda: L.zeros(N).index_put_((idx,), a[:N // 4]),
        "cat": lambda: L.cat([a, a]), "stack": lambda: L.stack([a, a]),
        "flip(1)": lambda: a2.flip(1), "flip(0)": lambda: a2.flip(0),
        "roll(1)": lambda: a2.roll(3, 1), "tril": lambda: a2.tril(),
        "topk(1)": lambda: a2.topk(10, 1), "unique": lambda: L.unique(ints),
        "bincount": lambda: L.bincount(ints), "histc": lambda: L.histc(a, 100),
        "embedding": lambda: F.embedding(small, a2), "one_hot": lambda: F.one_hot(small % 16, 16),
        "pad": lambda: F.pad(a2, (1, 1, 1, 1)), "argsort(1)": lambda: a2.argsort(1),
        "kthvalue(1)": lambda: a2.kthvalue(5, 1),
        "count_nonzero(1)": lambda: L.count_nonzero(a2, 1),
        # in-place forms (Note [In-place index composites]) and an integer reduction
        "index_copy_": lambda: w2.index_copy_(0, rows, a2[:256]),
        "index_fill_": lambda: w2.index_fill_(0, rows, 0.5),
        "put_": lambda: w.put_(idx[:N // 16], a[:N // 16]),
        "relu6_": lambda: F.relu6(w, inplace=True),
        "min() int64": lambda: idx.min(),
    }

def main():
    torch.set_num_threads(retorch.get_num_threads())  # torch may default to fewer than the cores
    threads = torch.get_num_threads()
    rng = np.random.default_rng(0)
    a_np = rng.uniform(0.1, 0.9, N).astype(np.float32)
    b_np = rng.uniform(0.1, 0.9, N).astype(np.float32)
    rt, pt = cases(retorch, a_np, b_np), cases(torch, a_np, b_np)
    only = sys.argv[1:]  # case names to run (all when none are given)
    rows, missing = [], []
    for name in (n for n in pt if not only or n in only):
        try:
            r = best_ms(rt[name])
        except Exception as e:  # an op retorch lacks is listed, not fatal
            missing.append(f"{name} ({type(e).__name__})")
            continue
        t = best_ms(pt[name])
        rows.append((r / t, name, r, t))
    rows.sort(reverse=True)
    print(f"retorch op sweep, 1M float32 (rows of 1024), {threads} threads, vs torch {torch.__version__}")
    print(f"{'case':24s} {'retorch':>10s} {'torch':>10s}  ratio")
    for ratio, name, r, t in rows:
        print(f"{name:24s} {r:8.3f} ms {t:8.3f} ms  {ratio:5.2f}")
    slower = sum(1 for row in rows if row[0] > 1.1)
    print(f"{len(rows)} cases: {len(rows) - slower} within 1.1x of torch or faster, {slower} slower")
    if missing:
        print("not run: " + ", ".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
