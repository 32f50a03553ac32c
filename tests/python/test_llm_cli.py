"""`retorch generate` and `retorch bench-llm` end to end on a tiny checkpoint and tokenizer the test
writes: the streamed text equals transformers' greedy continuation decoded by `tokenizers`."""
import os
import re
import subprocess

import pytest
import torch

from test_llama import hf_model, save

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "tools", "retorch")
pytestmark = pytest.mark.skipif(not os.path.exists(CLI), reason="build/tools/retorch not built")

CORPUS = ["the cat sat on the mat and the dog sat on the log",
          "a quick brown fox jumps over the lazy dog", "it was the best of times",
          "to be or not to be that is the question", "the rain in spain stays mainly"] * 4


def write_checkpoint(path):
    """A byte-level BPE over an ASCII corpus (no byte tokens beyond it, so every generated token
    decodes to whole characters) and a random Llama with its vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=120,
                                                        special_tokens=["<s>", "</s>"]))
    model = hf_model("gqa", seed=5)
    vocab = tok.get_vocab_size()
    cfg = model.config
    cfg.vocab_size, cfg.bos_token_id, cfg.eos_token_id = vocab, 0, 1
    torch.manual_seed(5)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn_like(p))
    save(model, path)
    tok.save(str(path / "tokenizer.json"))
    return model, tok


def test_generate_streams_the_greedy_continuation(tmp_path):
    model, tok = write_checkpoint(tmp_path / "m")
    prompt = "the cat sat on"
    ids = tok.encode(prompt).ids
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=12,
                             pad_token_id=1)[0, len(ids):].tolist()
    expect = prompt + tok.decode(out, skip_special_tokens=True)
    done = subprocess.run([CLI, "generate", "--model", str(tmp_path / "m"), "--prompt", prompt,
                           "--temperature", "0", "--max-new-tokens", "12"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n") == expect
    assert re.search(r"prefill: \d+ tokens, [\d.]+ tokens/s \| decode: \d+ tokens", done.stderr)
    # A bfloat16 KV cache: the engine's own greedy tokens with that cache.
    import retorch
    import retorch.llm as llm
    m = llm.load(tmp_path / "m")
    want = llm.generate(m, [ids], max_new_tokens=12, temperature=0.0,
                        kv_dtype=retorch.bfloat16)[0]
    done = subprocess.run([CLI, "generate", "--model", str(tmp_path / "m"), "--prompt", prompt,
                           "--temperature", "0", "--max-new-tokens", "12", "--kv-dtype",
                           "bfloat16"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n") == prompt + tok.decode(want, skip_special_tokens=True)


def test_bench_llm_and_errors(tmp_path):
    write_checkpoint(tmp_path / "m")
    done = subprocess.run([CLI, "bench-llm", "--model", str(tmp_path / "m"), "--prompt-len", "8",
                           "--gen-len", "4", "--batch", "2"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.search(r"prefill: 2 x 8 tokens, [\d.]+ tokens/s", done.stdout)
    assert re.search(r"decode:  batch 2, [\d.]+ tokens/s .*bandwidth bound", done.stdout)
    assert "KV cache float32" in done.stdout
    done = subprocess.run([CLI, "bench-llm", "--model", str(tmp_path / "m"), "--prompt-len", "8",
                           "--gen-len", "4", "--kv-dtype", "bfloat16"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "KV cache bfloat16" in done.stdout
    bad = subprocess.run([CLI, "bench-llm", "--kv-dtype", "float16"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode != 0 and "kv-dtype" in bad.stderr
    bad = subprocess.run([CLI, "generate", "--model", str(tmp_path / "nope"), "--prompt", "x"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "neither a model directory nor a .gguf file" in bad.stderr
    bad = subprocess.run([CLI, "bench-llm", "--model", "7b"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 1 and "nor a preset (110m, 1b)" in bad.stderr


def test_stop_strings(tmp_path):
    import retorch.llm as llm
    model, tok = write_checkpoint(tmp_path / "m")
    prompt = "the dog"
    ids = tok.encode(prompt).ids
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=12,
                             min_new_tokens=12, pad_token_id=1)[0, len(ids):].tolist()
    full = tok.decode(out, skip_special_tokens=True)
    stop = full[len(full) // 2: len(full) // 2 + 3]
    # Generation ends with the first token whose text completes the stop string (kept, as HF's
    # StopStringCriteria keeps it).
    k = next(k for k in range(1, 13) if stop in tok.decode(out[:k], skip_special_tokens=True))
    m = llm.load(tmp_path / "m")
    rtok = llm.load_tokenizer(tmp_path / "m")
    got = llm.generate(m, [ids], max_new_tokens=12, temperature=0.0, ignore_eos=True,
                       tokenizer=rtok, stop_strings=[stop])[0]
    assert got == out[:k]
    done = subprocess.run([CLI, "generate", "--model", str(tmp_path / "m"), "--prompt", prompt,
                           "--temperature", "0", "--max-new-tokens", "12", "--stop", stop],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    if 1 not in out[:k]:  # (the CLI also stops at EOS)
        assert done.stdout.rstrip("\n") == prompt + tok.decode(out[:k], skip_special_tokens=True)
    with pytest.raises(ValueError, match="stop strings need"):
        llm.generate(m, [ids], max_new_tokens=2, stop_strings=["x"])
