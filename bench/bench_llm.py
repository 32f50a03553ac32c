"""LLM inference throughput: retorch.llm against PyTorch eager running transformers'
LlamaForCausalLM on the same configuration, in one run, with the hardware bounds (decode: copy
bandwidth / weight bytes per token, and with the KV cache's bytes added; prefill: the float32
GEMM peak). Random weights. retorch decodes twice: after the --prompt-len prompt, and after a
16-token one, where the weights are nearly all the bytes a step reads (PyTorch's decode figure
is taken after such a short prompt).

    PYTHONPATH=python:.deps/python /usr/bin/python3 bench/bench_llm.py [--sizes 110m,1b]
        [--formats f32,bf16,q8_0,q4_0] [--prompt-len 512] [--gen-len 32]
"""
import argparse
import time

import numpy as np
import torch

import retorch
import retorch.llm as llm

PRESETS = {
    # llama2.c's stories110M (tied head) and TinyLlama-1.1B.
    "110m": dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                 num_attention_heads=12, num_key_value_heads=12, tie_word_embeddings=True),
    "1b": dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
               num_attention_heads=32, num_key_value_heads=4),
}
QTYPES = {"f32": (-1, "float32"), "bf16": (-1, "bfloat16"), "q8_0": (8, None), "q4_0": (2, None)}


def copy_bandwidth():
    a = np.ones(64 << 20, np.float32)
    b = np.empty_like(a)
    best = min(_time(lambda: np.copyto(b, a)) for _ in range(5))
    return 2 * a.nbytes / best


def gemm_peak():
    a = retorch.randn(2048, 2048)
    retorch.mm(a, a)
    return 2 * 2048 ** 3 / min(_time(lambda: retorch.mm(a, a)) for _ in range(3))


def _time(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


SHORT = 16  # the short prompt of the second decode figure (and of PyTorch's decode below)


def bench_retorch(cfg, fmt, P, G, kv_dtype):
    qtype, dt = QTYPES[fmt]
    model = llm.random_model(dict(cfg, model_type="llama"),
                             dtype=getattr(retorch, dt) if dt else None, qtype=qtype)
    ids = [int(i) for i in np.random.default_rng(0).integers(3, cfg["vocab_size"], P)]

    def run(prompt):
        e = llm.Engine(model, max_context=len(prompt) + G + 1, max_seqs=1,
                       max_batch_tokens=len(prompt), kv_dtype=getattr(retorch, kv_dtype))
        e.add_request(prompt, max_new_tokens=G, temperature=0.0, ignore_eos=True)
        while e.has_unfinished():
            e.step()
        return e.stats()
    s = run(ids)
    # Decode after a SHORT-token prompt too, where the KV bytes are few and the weights bound it.
    s16 = run(ids[:SHORT])
    return (s["prefill_tokens"] / s["prefill_seconds"], s["decode_tokens"] / s["decode_seconds"],
            s16["decode_tokens"] / s16["decode_seconds"], model.weight_bytes_per_token())


def bench_torch(cfg, fmt, P, G):
    import transformers
    if fmt not in ("f32", "bf16"):
        return None, None
    config = transformers.LlamaConfig(**cfg, attn_implementation="eager")
    with torch.no_grad():
        model = transformers.LlamaForCausalLM(config).eval()
        if fmt == "bf16":
            model.to(torch.bfloat16)
        # torch's CPU bfloat16 GEMM is a scalar loop without AVX-512 BF16 (~5 GFLOP/s there):
        # its prefill rate is then measured on 64 tokens, or a 1B model would take minutes.
        native = "avx512_bf16" in open("/proc/cpuinfo").read()
        Pt = P if fmt == "f32" or native else min(P, 64)
        ids = torch.randint(3, cfg["vocab_size"], (1, Pt))
        gen = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
        model.generate(ids[:, :8], max_new_tokens=2, **gen)  # warm-up
        pre = _time(lambda: model(ids))
        # Decode: generating G more tokens after a short prompt, minus the prompt's own pass.
        short = ids[:, :SHORT]
        t1 = _time(lambda: model.generate(short, max_new_tokens=1, min_new_tokens=1, **gen))
        tg = _time(lambda: model.generate(short, max_new_tokens=G + 1, min_new_tokens=G + 1,
                                          **gen))
    return Pt / pre, G / max(tg - t1, 1e-9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="110m,1b")
    ap.add_argument("--formats", default="f32,bf16,q8_0,q4_0")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--gen-len", type=int, default=32)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--kv-dtype", default="float32", choices=["float32", "bfloat16"],
                    help="retorch's KV cache (the +KV bound counts its bytes)")
    ap.add_argument("--matmul-precision", default="highest", choices=["highest", "medium"],
                    help="retorch.set_float32_matmul_precision: medium rounds a bfloat16 "
                         "model's prefill activations once, as PyTorch's bfloat16 model does")
    a = ap.parse_args()
    unknown = set(a.formats.split(",")) - set(QTYPES)
    if unknown:
        ap.error(f"unknown formats {sorted(unknown)}; choose from {', '.join(QTYPES)}")
    torch.set_num_threads(retorch.get_num_threads() if hasattr(retorch, "get_num_threads") else 2)
    bw, peak = copy_bandwidth(), gemm_peak()
    retorch.set_float32_matmul_precision(a.matmul_precision)  # (after the float32 peak)
    print(f"copy bandwidth {bw / 1e9:.1f} GB/s, float32 GEMM peak {peak / 1e9:.1f} GFLOP/s, "
          f"torch {torch.__version__} threads {torch.get_num_threads()}, KV cache {a.kv_dtype}, "
          f"retorch float32 matmul precision {a.matmul_precision}")
    print(f"{'model':6} {'format':6} | {'prefill tok/s':>13} {'torch':>7} {'ratio':>6} "
          f"{'% peak':>6} | {'decode tok/s':>12} {'torch':>7} {'ratio':>6} {'% bound':>7} "
          f"{'+KV':>5} | {'after ' + str(SHORT):>9} {'% bound':>7}")
    for size in a.sizes.split(","):
        cfg = PRESETS[size]
        for fmt in a.formats.split(","):
            pre, dec, dec16, nbytes = bench_retorch(cfg, fmt, a.prompt_len, a.gen_len,
                                                    a.kv_dtype)
            tpre, tdec = (None, None) if a.no_torch else bench_torch(cfg, fmt, a.prompt_len,
                                                                     a.gen_len)
            H, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
            Hkv = cfg["num_key_value_heads"] * H // cfg["num_attention_heads"]
            flops = 2 * (L * (2 * H * H + 2 * H * Hkv + 3 * H * cfg["intermediate_size"]) + V * H)
            # A decode step also reads the keys and values of its context.
            kv_bytes = 2 if a.kv_dtype == "bfloat16" else 4
            kv = 2 * L * Hkv * kv_bytes * (a.prompt_len + a.gen_len // 2)

            def f(x, w=7, p=1):
                return f"{x:{w}.{p}f}" if x else f"{'n/a':>{w}}"

            print(f"{size:6} {fmt:6} | {f(pre, 13)} {f(tpre)} {f(tpre and pre / tpre, 6, 2)} "
                  f"{f(100 * pre * flops / peak, 6, 0)} | {f(dec, 12, 2)} {f(tdec, 7, 2)} "
                  f"{f(tdec and dec / tdec, 6, 2)} {f(100 * dec * nbytes / bw, 7, 0)} "
                  f"{f(100 * dec * (nbytes + kv) / bw, 5, 0)} | {f(dec16, 9, 2)} "
                  f"{f(100 * dec16 * nbytes / bw, 7, 0)}")


if __name__ == "__main__":
    main()
