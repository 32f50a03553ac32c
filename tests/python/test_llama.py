"""retorch.llm's Llama family against Hugging Face transformers (LlamaForCausalLM, Qwen2, Mistral on
torch) on tiny random checkpoints the test writes: logits, greedy generations, paged batching and
the sampling filters."""
import numpy as np
import pytest
import torch

import retorch
import retorch.llm as llm

transformers = pytest.importorskip("transformers")

BASE = dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
            rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)

CONFIGS = {
    "gqa": dict(model_type="llama"),
    "mha_tied": dict(model_type="llama", num_key_value_heads=4, tie_word_embeddings=True),
    "gqa4_linear_rope": dict(model_type="llama", num_key_value_heads=1, rope_theta=500.0,
                             rope_scaling={"type": "linear", "factor": 2.0}),
    "llama3_rope_bias": dict(model_type="llama", attention_bias=True, mlp_bias=True,
                             rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 16}),
    "qwen2": dict(model_type="qwen2", num_key_value_heads=2, tie_word_embeddings=True),
    "mistral_window": dict(model_type="mistral", sliding_window=4),
}


def hf_model(kind, seed=0):
    cfg = dict(BASE, **CONFIGS[kind])
    model_type = cfg.pop("model_type")
    cls = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
           "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
           "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM)}[model_type]
    config = cls[0](**cfg, attn_implementation="eager")
    torch.manual_seed(seed)
    model = cls[1](config).eval()
    with torch.no_grad():
        # HF zero-initializes biases and sets norms to one: randomize everything so each weight
        # shows up in the logits.
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.15 * torch.randn_like(p))
    return model


def save(model, path, **kw):
    model.save_pretrained(path, safe_serialization=True, **kw)
    return path


def rel_err(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


PROMPT = [1, 17, 5, 33, 90, 4, 61, 8, 12, 77, 3, 40]


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_logits_match_transformers(tmp_path, kind):
    model = hf_model(kind)
    m = llm.load(save(model, tmp_path / kind))
    with torch.no_grad():
        expect = model(torch.tensor([PROMPT])).logits[0].numpy()
    got = llm.Engine(m, block_size=4).forward_all(PROMPT).numpy()
    assert got.shape == expect.shape
    assert rel_err(got, expect) < 1e-4, kind


@pytest.mark.parametrize("kind", ["gqa", "qwen2", "mistral_window"])
def test_greedy_generation_is_token_identical(tmp_path, kind):
    model = hf_model(kind, seed=1)
    model.generation_config.eos_token_id = None  # both run the full length
    m = llm.load(save(model, tmp_path / kind))
    with torch.no_grad():
        hf = model.generate(torch.tensor([PROMPT]), do_sample=False, max_new_tokens=16,
                            pad_token_id=0)[0, len(PROMPT):].tolist()
    got = llm.generate(m, [PROMPT], max_new_tokens=16, temperature=0.0, ignore_eos=True)[0]
    assert got == hf


@pytest.mark.parametrize("kv_dtype", ["float32", "bfloat16"])
def test_generation_on_cuda_is_token_identical(tmp_path, kv_dtype):
    # The engine moves the model, cache and batches to cuda: the CUDA backend's kernels where it
    # has a device, the device fallback onto the cpu here otherwise. Either way the greedy tokens
    # are transformers', the logits its within float32 (or the bfloat16 cache's) rounding.
    model = hf_model("gqa", seed=1)
    model.generation_config.eos_token_id = None
    with torch.no_grad():
        hf = model.generate(torch.tensor([PROMPT]), do_sample=False, max_new_tokens=12,
                            pad_token_id=0)[0, len(PROMPT):].tolist()
        expect = model(torch.tensor([PROMPT])).logits[0].numpy()
    m = llm.load(save(model, tmp_path / "m"))
    kv = getattr(retorch, kv_dtype)
    engine = llm.Engine(m, block_size=4, kv_dtype=kv, device="cuda")
    got = engine.forward_all(PROMPT)
    assert got.device.type == "cuda"
    assert rel_err(got.cpu().numpy(), expect) < (1e-4 if kv_dtype == "float32" else 2e-2)
    if kv_dtype == "float32":
        assert llm.generate(m, [PROMPT], max_new_tokens=12, temperature=0.0, ignore_eos=True,
                            device="cuda")[0] == hf


@pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")
def test_decode_graphs_on_cuda_give_the_eager_tokens(tmp_path):
    # Note [Decode graphs]: sequences finishing at different steps make decode batches of 3, 2
    # and 1, so three graphs are captured and replayed; the greedy tokens are the eager ones.
    model = hf_model("gqa", seed=3)
    model.generation_config.eos_token_id = None
    m = llm.load(save(model, tmp_path / "m"))
    prompts, lengths = [PROMPT, PROMPT[:3], PROMPT[1:]], (10, 4, 7)
    outs, stats = {}, {}
    for graphs in (False, True):
        e = llm.Engine(m, block_size=4, max_seqs=3, max_context=64, device="cuda",
                       cuda_graphs=graphs)
        ids = [e.add_request(p, max_new_tokens=n, temperature=0.0, ignore_eos=True)
               for p, n in zip(prompts, lengths)]
        while e.has_unfinished():
            e.step()
        outs[graphs], stats[graphs] = [e.tokens(i) for i in ids], e.stats()
    assert outs[True] == outs[False]
    assert stats[False]["graph_replays"] == 0
    assert stats[True]["graph_replays"] == stats[True]["forward_passes"] - 1  # all but prefill


def greedy_tokens_are_near_the_cpu_maxima(m, tokens, kv, tol):
    """Each greedy token was, by the cpu's logits of the same prefix (its unfused kernels, run
    through the prefill path), a maximum to within tol of the logits' range: rounding may swap
    near-ties, a wrong kernel picks tokens far from the top."""
    cpu = llm.Engine(m, block_size=4, kv_dtype=kv)
    for i, t in enumerate(tokens):
        logits = cpu.forward_all(PROMPT + tokens[:i]).numpy()[-1]
        spread = float(logits.max() - logits.min())
        assert logits[t] >= logits.max() - tol * spread, (i, logits.max() - logits[t], spread)


@pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("weights,kv_dtype", [("bfloat16", "float32"), ("float16", "bfloat16")])
def test_sixteen_bit_decode_on_cuda_runs_the_fused_layers(tmp_path, weights, kv_dtype):
    # 16-bit weights run decode steps through rms_norm_linear(_rotary_and_cache)'s fused kernels
    # (Note [Normed decode projections]), graphed and eager: the same tokens both ways, each a
    # cpu maximum of its prefix's logits.
    model = hf_model("gqa", seed=4)
    model.generation_config.eos_token_id = None
    m = llm.load(save(model, tmp_path / "m"), dtype=getattr(retorch, weights))
    kv = getattr(retorch, kv_dtype)
    outs = {}
    for graphs in (False, True):
        e = llm.Engine(m, block_size=4, kv_dtype=kv, device="cuda", cuda_graphs=graphs)
        i = e.add_request(PROMPT, max_new_tokens=12, temperature=0.0, ignore_eos=True)
        while e.has_unfinished():
            e.step()
        outs[graphs] = e.tokens(i)[len(PROMPT):]
    assert outs[True] == outs[False] and len(outs[True]) == 12
    greedy_tokens_are_near_the_cpu_maxima(m, outs[True], kv, 2e-2)
    assert not any(s["op"] in ("aten::rms_norm_linear", "aten::rms_norm_linear_rotary_and_cache")
                   for s in retorch.device_fallback_stats())


def test_sharded_and_bfloat16_checkpoints(tmp_path):
    model = hf_model("gqa", seed=2)
    save(model, tmp_path / "sharded", max_shard_size="40KB")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").exists()
    with torch.no_grad():
        expect = model(torch.tensor([PROMPT])).logits[0].numpy()
    got = llm.Engine(llm.load(tmp_path / "sharded")).forward_all(PROMPT).numpy()
    assert rel_err(got, expect) < 1e-4
    # A bfloat16 checkpoint loads into float32 exactly as its bf16 values. (The reference is a
    # fresh float32 model given the rounded weights: .to(bfloat16) would also round HF's rotary
    # inv_freq buffer.)
    rounded = {k: v.bfloat16().float() for k, v in model.state_dict().items()}
    model.to(torch.bfloat16)
    save(model, tmp_path / "bf16")
    ref = hf_model("gqa", seed=2)
    ref.load_state_dict(rounded)
    with torch.no_grad():
        expect = ref(torch.tensor([PROMPT])).logits[0].numpy()
    got = llm.Engine(llm.load(tmp_path / "bf16")).forward_all(PROMPT).numpy()
    assert rel_err(got, expect) < 1e-4
    # Kept as bfloat16 (half the bytes per decode step): the same values, widened in registers
    # and multiplied in float32, so only the summation order differs.
    m16 = llm.load(tmp_path / "bf16", dtype=retorch.bfloat16)
    assert m16.weight_bytes_per_token() < 0.55 * llm.load(tmp_path / "bf16").weight_bytes_per_token()
    got16 = llm.Engine(m16).forward_all(PROMPT).numpy()
    assert rel_err(got16, expect) < 1e-4


def test_bfloat16_kv_cache(tmp_path):
    # Keys and values rounded to bfloat16 as they are written: logits within that rounding of
    # transformers', half the cache's bytes, and a paged batch still gives each prompt's tokens
    # alone (with the same cache dtype).
    model = hf_model("gqa", seed=4)
    m = llm.load(save(model, tmp_path / "m"))
    with torch.no_grad():
        expect = model(torch.tensor([PROMPT])).logits[0].numpy()
    e16 = llm.Engine(m, block_size=4, kv_dtype=retorch.bfloat16)
    assert rel_err(e16.forward_all(PROMPT).numpy(), expect) < 2e-2
    assert rel_err(llm.Engine(m, block_size=4).forward_all(PROMPT).numpy(), expect) < 1e-4
    assert e16.cache_bytes() * 2 == llm.Engine(m, block_size=4).cache_bytes()
    prompts = [PROMPT[:3], PROMPT, [5]]
    alone = [llm.generate(m, [p], max_new_tokens=8, temperature=0.0, ignore_eos=True,
                          kv_dtype=retorch.bfloat16)[0] for p in prompts]
    together = llm.generate(m, prompts, max_new_tokens=8, temperature=0.0, ignore_eos=True,
                            block_size=2, max_batch_tokens=5, kv_dtype=retorch.bfloat16)
    assert together == alone
    with pytest.raises(TypeError, match="float32 or bfloat16"):
        llm.Engine(m, kv_dtype=retorch.float16)


def test_bad_checkpoints_raise(tmp_path):
    with pytest.raises(ValueError, match="neither a model directory nor a .gguf file"):
        llm.load(tmp_path / "missing")
    d = save(hf_model("gqa"), tmp_path / "m")
    (d / "model.safetensors").unlink()
    with pytest.raises(ValueError, match="has neither model.safetensors"):
        llm.load(d)
    d2 = save(hf_model("gqa"), tmp_path / "m2")
    (d2 / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(ValueError, match="not a Llama-family architecture"):
        llm.load(d2)


def test_paged_batch_matches_each_alone(tmp_path):
    m = llm.load(save(hf_model("gqa", seed=3), tmp_path / "m"))
    prompts = [PROMPT[:3], PROMPT, PROMPT[4:9], [5]]
    alone = [llm.generate(m, [p], max_new_tokens=10, temperature=0.0, ignore_eos=True)[0]
             for p in prompts]
    # Small blocks and a small token budget: prompts are prefilled in chunks while others decode.
    together = llm.generate(m, prompts, max_new_tokens=10, temperature=0.0, ignore_eos=True,
                            block_size=2, max_batch_tokens=5)
    assert together == alone
    # A request that joins while others are mid-generation gets the same tokens too.
    e = llm.Engine(m, block_size=4, max_seqs=4, max_context=64)
    first = e.add_request(prompts[1], max_new_tokens=10, temperature=0.0, ignore_eos=True)
    for _ in range(4):
        e.step()
    late = e.add_request(prompts[0], max_new_tokens=10, temperature=0.0, ignore_eos=True)
    while e.has_unfinished():
        e.step()
    assert e.tokens(first)[len(prompts[1]):] == alone[1]
    assert e.tokens(late)[len(prompts[0]):] == alone[0]
    assert e.num_free_blocks() == 64 // 4 * 4  # every block came back


def test_engine_errors(tmp_path):
    m = llm.load(save(hf_model("gqa"), tmp_path / "m"))
    e = llm.Engine(m, block_size=4, num_blocks=2, max_context=64)
    with pytest.raises(IndexError, match="token id 96 is outside the vocabulary of 96"):
        e.add_request([1, 96])
    with pytest.raises(ValueError, match="the prompt has no tokens"):
        e.add_request([])
    e.add_request(list(range(3, 12)), max_new_tokens=4)  # 9 tokens > 2 blocks of 4
    with pytest.raises(RuntimeError, match="KV cache .* cannot hold"):
        e.step()


def hf_filter(logits, history, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, penalty=1.0):
    from transformers.generation import logits_process as lp
    procs = []
    if penalty != 1.0:
        procs.append(lp.RepetitionPenaltyLogitsProcessor(penalty))
    if temperature != 1.0:
        procs.append(lp.TemperatureLogitsWarper(temperature))
    if top_k:
        procs.append(lp.TopKLogitsWarper(top_k))
    if top_p < 1.0:
        procs.append(lp.TopPLogitsWarper(top_p))
    if min_p:
        procs.append(lp.MinPLogitsWarper(min_p))
    ids = torch.tensor([history])
    x = torch.from_numpy(logits)[None].clone()
    for p in procs:
        x = p(ids, x)
    return x[0].numpy()


@pytest.mark.parametrize("params", [
    dict(temperature=0.7), dict(top_k=5), dict(top_k=1), dict(top_p=0.9), dict(top_p=0.3),
    dict(min_p=0.1), dict(penalty=1.3), dict(temperature=1.5, top_k=20, top_p=0.8, min_p=0.05,
                                               penalty=1.2)])
def test_sampling_filters_match_transformers(rng, params):
    logits = (rng.standard_normal(200) * 3).astype(np.float32)
    history = [int(i) for i in rng.integers(0, 200, 15)]
    expect = hf_filter(logits, history, **params)
    kw = dict(params)
    if "penalty" in kw:
        kw["repetition_penalty"] = kw.pop("penalty")
    got = np.array(llm.Sampler(**kw).process(retorch.from_numpy(logits), history), np.float32)
    assert np.array_equal(np.isfinite(got), np.isfinite(expect))
    fin = np.isfinite(expect)
    np.testing.assert_allclose(got[fin], expect[fin], rtol=1e-6)


def test_seeded_sampling(rng):
    logits = retorch.from_numpy((rng.standard_normal(50)).astype(np.float32))

    def draw(seed):
        s = llm.Sampler(temperature=1.0, seed=seed)
        return [s.sample(logits, []) for _ in range(40)]

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)
    # Drawn tokens follow the distribution: the most likely token is drawn most often.
    s = llm.Sampler(temperature=0.5, seed=3)
    counts = np.bincount([s.sample(logits, []) for _ in range(600)], minlength=50)
    assert counts.argmax() == int(np.argmax(logits.numpy()))
    greedy = llm.Sampler(temperature=0.0)
    assert greedy.sample(logits, []) == int(np.argmax(logits.numpy()))
    with pytest.raises(ValueError, match="top_p must be in"):
        llm.Sampler(top_p=0.0)


SAMPLING_CASES = [
    dict(temperature=0.0), dict(temperature=1.0), dict(temperature=0.7, top_k=5),
    dict(top_p=0.9), dict(temperature=1.3, top_p=0.3), dict(min_p=0.1),
    dict(repetition_penalty=1.3), dict(temperature=0.0, repetition_penalty=1.5), dict(top_k=1),
    dict(top_k=1000), dict(temperature=1.5, top_k=20, top_p=0.8, min_p=0.05,
                           repetition_penalty=1.2)]


def sample_rows_match_the_samplers(rng, device, vocab=300, draws=12):
    """llm.sample_rows over rows of logits on `device` gives each row's Sampler.sample token,
    draw after draw from the same seeds (ties among the logits included)."""
    for draw in range(draws):
        logits = (rng.standard_normal((len(SAMPLING_CASES), vocab)) * 3).astype(np.float32)
        if draw % 3 == 0:
            logits[:, :12] = logits[:, :1]  # ties at the top for some rows
        history = [[int(i) for i in rng.integers(-2, vocab + 2, 15)] for _ in SAMPLING_CASES]
        history[0] = []
        host = [llm.Sampler(seed=draw * 50 + i, **c) for i, c in enumerate(SAMPLING_CASES)]
        rows = [llm.Sampler(seed=draw * 50 + i, **c) for i, c in enumerate(SAMPLING_CASES)]
        x = retorch.from_numpy(logits)
        for _ in range(2):  # the second token from the same generators
            want = [s.sample(x[i], history[i]) for i, s in enumerate(host)]
            assert llm.sample_rows(x.to(device), rows, history) == want


def test_sample_rows_gives_the_samplers_tokens(rng):
    sample_rows_match_the_samplers(rng, "cpu")
    s = [llm.Sampler()]
    with pytest.raises(ValueError, match=r"sample_rows: expected \[rows, vocab\] float32"):
        llm.sample_rows(retorch.zeros(4), s, [[]])
    with pytest.raises(ValueError, match="sample_rows: 2 rows of logits for 1 samplers"):
        llm.sample_rows(retorch.zeros(2, 5), s, [[]])


@pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")
def test_sample_rows_on_cuda_run_on_the_device(rng):
    retorch.reset_device_fallback_stats()
    sample_rows_match_the_samplers(rng, "cuda", vocab=32000, draws=4)
    assert [s["op"] for s in retorch.device_fallback_stats()] == []


def test_sampled_generation_on_cuda_gives_the_cpu_tokens(tmp_path):
    # Rows of logits on a device are sampled there (Note [Sampling where the logits are]): the
    # same seeds give the cpu engine's tokens (through the device fallback without a GPU).
    model = hf_model("gqa", seed=5)
    model.generation_config.eos_token_id = None
    m = llm.load(save(model, tmp_path / "m"))
    params = [dict(temperature=0.9, top_p=0.8, seed=1), dict(temperature=1.2, top_k=7, seed=2),
              dict(temperature=0.7, min_p=0.05, repetition_penalty=1.3, seed=3),
              dict(temperature=0.0)]
    outs = {}
    for device in ("cpu", "cuda"):
        e = llm.Engine(m, block_size=4, max_seqs=4, device=device)
        ids = [e.add_request(PROMPT[:8 + i], max_new_tokens=10, ignore_eos=True, **p)
               for i, p in enumerate(params)]
        while e.has_unfinished():
            e.step()
        outs[device] = [e.tokens(i) for i in ids]
    assert outs["cuda"] == outs["cpu"]
