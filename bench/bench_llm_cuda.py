"""The CUDA issue's Llama decode row on a GPU machine: `retorch bench-llm --device cuda` against
transformers' LlamaForCausalLM (PyTorch eager, bf16) on the same GPU, same shapes, same run.
Without a CUDA device (or a CUDA build of torch) it says so and exits 0.

  PYTHONPATH=python python3 bench/bench_llm_cuda.py [--retorch build/tools/retorch] [--batch 1 32]
"""
import argparse
import os
import re
import subprocess
import sys
import time

import torch

import retorch

# TinyLlama-1.1B's shapes: the `1b` preset of `retorch bench-llm`.
SHAPES = dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
              num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048)


# The sampled decode rows' settings (greedy elsewhere).
SAMPLED = dict(temperature=0.8, top_p=0.9)


def retorch_decode(cli, batch, prompt, gen, eager=False, dependent=True, sampled=False):
    """(decode tokens/s, percent of the bandwidth bound) from the retorch CLI's report; `eager`
    without CUDA graphs of the decode steps, `dependent=False` without dependent launches of
    the projections (RETORCH_CUDA_PDL=0, Note [Dependent launches]), `sampled` drawing tokens
    with SAMPLED's temperature and top-p (on the device: Note [Sampling where the logits are])."""
    env = dict(os.environ, RETORCH_CUDA_PDL="1" if dependent else "0")
    sampling = ["--temperature", str(SAMPLED["temperature"]), "--top-p", str(SAMPLED["top_p"])]
    out = subprocess.run([cli, "bench-llm", "--model", "1b", "--format", "bf16", "--device",
                          "cuda", "--batch", str(batch), "--prompt-len", str(prompt),
                          "--gen-len", str(gen)] + (["--eager"] if eager else []) +
                         (sampling if sampled else []),
                         check=True, capture_output=True, text=True, env=env)
    m = re.search(r"decode:.*?([0-9.]+) tokens/s.*?, ([0-9]+)% of it", out.stdout)
    if not m:
        raise RuntimeError("unexpected bench-llm output:\n" + out.stdout)
    return float(m.group(1)), int(m.group(2))


def hf_decode(model, batch, prompt, gen, sampled=False):
    """Decode tokens/s of transformers' generate: (time of `gen` tokens - time of 1) / (gen - 1);
    `sampled` with SAMPLED's temperature and top-p."""
    how = dict(do_sample=True, **SAMPLED) if sampled else dict(do_sample=False)
    def run(new):
        ids = torch.randint(3, SHAPES["vocab_size"], (batch, prompt), device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                           min_new_tokens=new, pad_token_id=0, **how)
        torch.cuda.synchronize()
        return time.perf_counter() - t0
    run(4)
    one = min(run(1) for _ in range(2))
    full = min(run(gen) for _ in range(2))
    return batch * (gen - 1) / (full - one)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--retorch", default=os.path.join("build", "tools", "retorch"))
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--gen-len", type=int, default=64)
    a = ap.parse_args()
    if not retorch.cuda.is_available() or not torch.cuda.is_available():
        print("bench_llm_cuda: no CUDA device for retorch and torch here; nothing measured")
        return 0
    import transformers
    cfg = transformers.LlamaConfig(**SHAPES)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}, "
          f"transformers {transformers.__version__}")
    print("\n| batch | retorch decode (graphs) | graphs, no dependent launches | retorch eager | "
          "transformers decode | speed-up | retorch vs bandwidth bound |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for b in a.batch:
        r, pct = retorch_decode(a.retorch, b, a.prompt_len, a.gen_len)
        plain, _ = retorch_decode(a.retorch, b, a.prompt_len, a.gen_len, dependent=False)
        e, _ = retorch_decode(a.retorch, b, a.prompt_len, a.gen_len, eager=True)
        h = hf_decode(model, b, a.prompt_len, a.gen_len)
        print(f"| {b} | {r:.1f} tokens/s | {plain:.1f} tokens/s | {e:.1f} tokens/s | "
              f"{h:.1f} tokens/s | {r / h:.2f}x | {pct}% |")
    print(f"\nSampled decode (temperature {SAMPLED['temperature']}, top-p {SAMPLED['top_p']}):\n")
    print("| batch | retorch (graphs) | transformers | speed-up |")
    print("| --- | --- | --- | --- |")
    for b in a.batch:
        r, _ = retorch_decode(a.retorch, b, a.prompt_len, a.gen_len, sampled=True)
        h = hf_decode(model, b, a.prompt_len, a.gen_len, sampled=True)
        print(f"| {b} | {r:.1f} tokens/s | {h:.1f} tokens/s | {r / h:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
