"""Drawing the next token from rows of 32k logits on the cpu: retorch's host sampler
(Sampler.sample, a row at a time), its tensor path (llm.sample_rows, Note [Sampling where the
logits are]; what the engine takes for steps with top-p rows and for every step on a device)
and transformers' logits warpers with torch.multinomial, in the same run.

  PYTHONPATH=python:.deps/python /usr/bin/python3 bench/bench_sampling.py
"""
import time

import numpy as np
import torch

import retorch
from retorch import llm

VOCAB = 32000
CASES = [dict(temperature=0.8), dict(temperature=0.8, top_k=50),
         dict(temperature=0.8, top_p=0.9), dict(temperature=0.8, top_k=50, top_p=0.9)]


def per_step(f, steps=20):
    f()
    t0 = time.perf_counter()
    for _ in range(steps):
        f()
    return (time.perf_counter() - t0) / steps * 1e3


def hf_warpers(kw):
    from transformers.generation import logits_process as lp
    procs = [lp.TemperatureLogitsWarper(kw["temperature"])]
    if "top_k" in kw:
        procs.append(lp.TopKLogitsWarper(kw["top_k"]))
    if "top_p" in kw:
        procs.append(lp.TopPLogitsWarper(kw["top_p"]))
    return procs


def main():
    torch.set_num_threads(retorch.get_num_threads())
    rng = np.random.default_rng(0)
    print(f"threads {retorch.get_num_threads()}; ms per step (all rows), vocabulary {VOCAB}\n")
    print("| rows | sampling | host sampler | sample_rows | transformers + multinomial | "
          "sample_rows / transformers |")
    print("| --- | --- | --- | --- | --- | --- |")
    for rows in (1, 32):
        x = (rng.standard_normal((rows, VOCAB)) * 3).astype(np.float32)
        rx, tx = retorch.from_numpy(x), torch.from_numpy(x)
        for kw in CASES:
            host = [llm.Sampler(seed=i, **kw) for i in range(rows)]
            tensor = [llm.Sampler(seed=i, **kw) for i in range(rows)]
            procs, ids = hf_warpers(kw), torch.zeros((rows, 1), dtype=torch.long)

            def hf():
                s = tx
                for p in procs:
                    s = p(ids, s)
                return torch.multinomial(torch.softmax(s, -1), 1)
            h = per_step(lambda: [s.sample(rx[i], []) for i, s in enumerate(host)])
            r = per_step(lambda: llm.sample_rows(rx, tensor, [[]] * rows))
            t = per_step(hf)
            name = ", ".join(f"{k} {v}" for k, v in kw.items())
            print(f"| {rows} | {name} | {h:.2f} | {r:.2f} | {t:.2f} | {r / t:.2f} |")


if __name__ == "__main__":
    main()
