"""retorch.llm: Llama-family inference — models from HF safetensors or GGUF, a continuous-batching
engine over a paged KV cache, sampling, and the tokenizer."""
from . import _C
from ._C import _llm

__all__ = ["load", "load_tokenizer", "random_model", "Engine", "Sampler", "Tokenizer", "generate",
           "sample_rows"]

Engine = _llm.Engine
Sampler = _llm.Sampler
sample_rows = _llm.sample_rows
Tokenizer = getattr(getattr(_C, "_tokenizer", None), "Tokenizer", None)


def load(path, dtype=None):
    """A model from a HF directory (config.json + safetensors) or a .gguf file."""
    import os
    from . import float32
    return _llm.load(os.fspath(path), dtype if dtype is not None else float32)


def load_tokenizer(path):
    """The tokenizer of a HF directory (tokenizer.json) or a .gguf file (tokenizer.ggml.*)."""
    import os
    return _llm.load_tokenizer(os.fspath(path))


def random_model(config, dtype=None, qtype=-1, seed=0):
    """A model with random weights for `config` (a dict of HF config.json keys); `qtype` is a
    ggml quantization type id (8: Q8_0, 2: Q4_0) or -1 for dense weights in `dtype`."""
    from . import float32
    return _llm.random(dict(config), dtype if dtype is not None else float32, qtype, seed)


def generate(model, prompts, max_new_tokens=32, block_size=16, max_batch_tokens=512,
             num_blocks=0, tokenizer=None, kv_dtype=None, device=None, cuda_graphs=True,
             **sampling):
    """Generates for several token-id prompts at once (continuous batching); returns the new
    tokens of each prompt, in order. `kv_dtype`: the KV cache's element type (float32, or
    bfloat16 for half its memory). `device`: where the model runs (the engine moves it there;
    "cuda" with the CUDA backend, where `cuda_graphs` replays decode steps from CUDA graphs,
    one per batch size). `sampling`: temperature, top_k, top_p, min_p,
    repetition_penalty, stop_token_ids, stop_strings (needs `tokenizer`), ignore_eos, seed."""
    from . import float32
    ctx = max(len(p) for p in prompts) + max_new_tokens + 1
    engine = Engine(model, block_size=block_size, num_blocks=num_blocks, max_context=ctx,
                    max_seqs=max(1, len(prompts)), max_batch_tokens=max_batch_tokens,
                    kv_dtype=kv_dtype if kv_dtype is not None else float32, device=device,
                    cuda_graphs=cuda_graphs)
    if tokenizer is not None:
        engine.set_tokenizer(tokenizer)
    ids = [engine.add_request(list(p), max_new_tokens=max_new_tokens, **sampling)
           for p in prompts]
    while engine.has_unfinished():
        engine.step()
    return [engine.tokens(i)[len(p):] for i, p in zip(ids, prompts)]
