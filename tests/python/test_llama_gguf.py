"""Llama models and tokenizers from GGUF files the test writes with llama.cpp's gguf package, checked
against Hugging Face transformers on the same weights (float32, and Q8_0/Q4_0-quantized)."""
import numpy as np
import pytest
import torch

import retorch.llm as llm
from test_llama import PROMPT, hf_model, rel_err
from test_ops_quant import interleave_q4_0

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType


def permute(w, n_head):
    """llama.cpp's converter reorders each head's q/k rows so rotary pairs are adjacent."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def write_gguf(model, path, qtype=None, arch="llama", with_vocab=False, mixed=False):
    """The HF model as llama.cpp's convert_hf_to_gguf.py lays it out. Returns the HF state dict
    with every quantized weight replaced by its dequantized values (the reference weights)."""
    c = model.config
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_rope_freq_base(c.rope_theta)
    w.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
    if with_vocab:
        toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
        toks += ["▁a", "▁b", "ab"]
        toks += [f"x{i}" for i in range(c.vocab_size - len(toks))] if c.vocab_size > len(toks) else []
        w.add_tokenizer_model("llama")
        w.add_token_list(toks[:max(c.vocab_size, len(toks))])
        w.add_token_scores([0.0] * 3 + [0.0] * 256 + [-1.0, -2.0, -3.0] +
                           [-10.0] * (len(toks) - 262))
        w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (len(toks) - 259))
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    ref = {}
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
             "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}

    def put(gname, hname, arr):
        ref[hname] = arr
        if qtype is not None and arr.ndim == 2:
            qt = Q.Q4_0 if mixed and ("attn_v" in gname or "ffn_up" in gname) else qtype
            qb = gguf.quants.quantize(arr, qt)
            ref[hname] = gguf.quants.dequantize(qb, qt).reshape(arr.shape)
            w.add_tensor(gname, qb, raw_shape=qb.shape, raw_dtype=qt)
        else:
            w.add_tensor(gname, arr)

    for k, v in sd.items():
        if k == "model.embed_tokens.weight":
            put("token_embd.weight", k, v)
        elif k == "model.norm.weight":
            put("output_norm.weight", k, v)
        elif k == "lm_head.weight":
            if not c.tie_word_embeddings:
                put("output.weight", k, v)
        else:
            _, _, i, rest = k.split(".", 3)
            mod, kind = rest.rsplit(".", 1)
            if arch == "llama" and mod == "self_attn.q_proj":
                v = permute(v, c.num_attention_heads)
            elif arch == "llama" and mod == "self_attn.k_proj":
                v = permute(v, c.num_key_value_heads)
            put(f"blk.{i}.{names[mod]}.{kind}", k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    # Undo the permutation in the reference: the HF model keeps its own row order.
    for k in list(ref):
        if arch == "llama" and k.endswith("q_proj.weight"):
            ref[k] = permute_back(ref[k], c.num_attention_heads)
        elif arch == "llama" and k.endswith("k_proj.weight"):
            ref[k] = permute_back(ref[k], c.num_key_value_heads)
    if c.tie_word_embeddings:
        ref["lm_head.weight"] = ref["model.embed_tokens.weight"]
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in ref.items()}


def permute_back(w, n_head):
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


@pytest.mark.parametrize("kind,arch", [("gqa", "llama"), ("mha_tied", "llama"),
                                       ("qwen2", "qwen2")])
def test_gguf_float32_logits_match_transformers(tmp_path, kind, arch):
    model = hf_model(kind)
    write_gguf(model, tmp_path / "m.gguf", arch=arch)
    with torch.no_grad():
        expect = model(torch.tensor([PROMPT])).logits[0].numpy()
    got = llm.Engine(llm.load(tmp_path / "m.gguf")).forward_all(PROMPT).numpy()
    assert rel_err(got, expect) < 1e-4


@pytest.mark.parametrize("qtype,mixed", [(Q.Q8_0, False), (Q.Q4_0, False), (Q.Q8_0, True)])
def test_gguf_quantized_logits_match_dequantized_transformers(tmp_path, qtype, mixed):
    # hidden 64 / intermediate 96 are multiples of the 32-value blocks.
    model = hf_model("gqa", seed=4)
    ref = write_gguf(model, tmp_path / "q.gguf", qtype=qtype, mixed=mixed)
    model.load_state_dict(ref)
    with torch.no_grad():
        expect = model(torch.tensor([PROMPT])).logits[0].numpy()
    m = llm.load(tmp_path / "q.gguf")
    names = m.state_dict().keys()
    # Parts stored in one format are fused into one projection; mixed formats stay apart.
    assert ("layers.0.self_attn.v_proj.weight" in names) == mixed
    assert ("layers.0.mlp.gate_up_proj.weight" in names) == (not mixed)
    if qtype == Q.Q4_0:
        # Q4_0 projections are held as Q4_0x16 (16 rows interleaved): the file's bytes, reordered.
        t = {r.name: np.asarray(r.data) for r in gguf.GGUFReader(tmp_path / "q.gguf").tensors}
        fused = np.concatenate([t[f"blk.0.ffn_{p}.weight"] for p in ("gate", "up")])
        held = m.state_dict()["layers.0.mlp.gate_up_proj.weight"].numpy()
        assert np.array_equal(held, interleave_q4_0(fused))
    got = llm.Engine(m).forward_all(PROMPT).numpy()
    # Few rows (decode, short prompts) take the integer path, which rounds activations to 8-bit
    # blocks before the dot products: a few percent on these deliberately large random weights.
    assert rel_err(got, expect) < 5e-2
    # Many rows (prefill) dequantize the weights exactly and run SGEMM: float32 parity.
    long = (PROMPT * 3)[:32]
    with torch.no_grad():
        expect_long = model(torch.tensor([long])).logits[0].numpy()
    assert rel_err(llm.Engine(m).forward_all(long).numpy(), expect_long) < 1e-4
    # Quantized weights stay quantized: a decode step reads about a quarter (Q8_0: 34/32 bytes
    # per weight) of the float32 bytes.
    assert m.weight_bytes_per_token() < 0.3 * 4 * sum(v.numel() for k, v in ref.items()
                                                      if "embed" not in k)
    greedy = llm.generate(m, [PROMPT], max_new_tokens=6, temperature=0.0, ignore_eos=True)[0]
    assert len(greedy) == 6


def test_gguf_tokenizer_and_errors(tmp_path):
    model = hf_model("gqa")
    write_gguf(model, tmp_path / "v.gguf", with_vocab=True)
    tok = llm.load_tokenizer(tmp_path / "v.gguf")
    ids = tok.encode("a b", True)
    assert ids[0] == 1  # SentencePiece vocabularies add BOS
    assert tok.decode(ids, True) == "a b"
    bad = tmp_path / "bad.gguf"
    bad.write_bytes((tmp_path / "v.gguf").read_bytes()[:200])
    with pytest.raises(Exception, match="bad.gguf"):
        llm.load(bad)
