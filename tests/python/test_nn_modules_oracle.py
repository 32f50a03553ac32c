"""C++ nn modules against torch.nn through the nn_oracle harness: recurrent (padded and packed),
attention and transformer modules, then the layers, activations and losses, default
initialization statistics and printing."""
import math

import pytest
import torch
import torch.nn as tnn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nn_oracle_harness import ORACLE_KEYS, compare, run_cpp


def build(name, options, seed=0):
    torch.manual_seed(seed)
    return getattr(tnn, name)(**{k: v for k, v in options.items() if k not in ORACLE_KEYS})


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float64)


# ---------------------------------------------------------------- recurrent modules

RNN_CASES = [
    ("RNN", dict(nonlinearity="tanh")),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("LSTM", dict()),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=3)),
    ("LSTM", dict(proj_size=2, num_layers=2, bidirectional=True, batch_first=True)),
    ("GRU", dict()),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("RNN", dict(bidirectional=True, bias=False)),
    ("GRU", dict(bias=False, num_layers=2)),
]


def rnn_forward(name, packed=None):
    def fwd(m, x):
        hx = None
        if "h0" in x:
            hx = (x["h0"], x["c0"]) if name == "LSTM" else x["h0"]
        if packed is None:
            y, h = m(x["input"], hx)
            return [y] + (list(h) if name == "LSTM" else [h])
        bf, enforce = packed
        p = pack_padded_sequence(x["input"], x["lengths"], batch_first=bf, enforce_sorted=enforce)
        y, h = m(p, hx)
        padded, _ = pad_packed_sequence(y, batch_first=bf)
        return [y.data, padded] + (list(h) if name == "LSTM" else [h])
    return fwd


def rnn_inputs(name, opts, T, B, with_hx, unbatched=False):
    D = 2 if opts.get("bidirectional") else 1
    L = opts.get("num_layers", 1) * D
    H = opts.get("hidden_size", 5)
    Hout = opts.get("proj_size", 0) or H
    if unbatched:
        x = {"input": randn(T, 4)}
        bshape = ()
    else:
        x = {"input": randn(B, T, 4) if opts.get("batch_first") else randn(T, B, 4)}
        bshape = (B,)
    if with_hx:
        x["h0"] = randn(L, *bshape, Hout)
        if name == "LSTM":
            x["c0"] = randn(L, *bshape, H)
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("case", range(len(RNN_CASES)))
def test_recurrent_padded(case, with_hx, dtype):
    name, extra = RNN_CASES[case]
    opts = dict(input_size=4, hidden_size=5, **extra)
    m = build(name, opts)
    compare(m, name, opts, rnn_inputs(name, opts, 6, 3, with_hx), rnn_forward(name), dtype=dtype)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_recurrent_unbatched(name):
    opts = dict(input_size=4, hidden_size=5, num_layers=2, bidirectional=True)
    for with_hx in (False, True):
        m = build(name, opts)
        compare(m, name, opts, rnn_inputs(name, opts, 5, 1, with_hx, unbatched=True),
                rnn_forward(name), dtype=torch.float64)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("case", range(len(RNN_CASES)))
def test_recurrent_packed_unsorted(case, batch_first):
    name, extra = RNN_CASES[case]
    opts = dict(dict(input_size=4, hidden_size=5, **extra), batch_first=batch_first)
    m = build(name, opts)
    x = rnn_inputs(name, opts, 6, 4, with_hx=case % 2 == 1)
    x["lengths"] = torch.tensor([3, 6, 1, 4])
    compare(m, name, dict(opts, enforce_sorted=False), x, rnn_forward(name, (batch_first, False)),
            dtype=torch.float64)


def test_recurrent_packed_sorted():
    opts = dict(input_size=4, hidden_size=5, bidirectional=True)
    m = build("LSTM", opts)
    x = rnn_inputs("LSTM", opts, 5, 3, with_hx=True)
    x["lengths"] = torch.tensor([5, 3, 2])
    compare(m, "LSTM", dict(opts, enforce_sorted=True), x, rnn_forward("LSTM", (False, True)))


def test_recurrent_dropout_is_off_in_eval():
    opts = dict(input_size=4, hidden_size=5, num_layers=3, dropout=0.5)
    m = build("GRU", opts)
    compare(m, "GRU", opts, rnn_inputs("GRU", opts, 4, 2, False), rnn_forward("GRU"))


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_recurrent_train_mode_without_dropout(name):
    opts = dict(input_size=4, hidden_size=5, num_layers=2, dropout=0.0, bidirectional=True)
    m = build(name, opts)
    compare(m, name, opts, rnn_inputs(name, opts, 4, 2, True), rnn_forward(name), train=True)


# ---------------------------------------------------------------- attention and transformers

def mha_forward(need_weights=True, average=True):
    def fwd(m, x):
        out, w = m(x["query"], x["key"], x["value"], key_padding_mask=x.get("key_padding_mask"),
                   need_weights=need_weights, attn_mask=x.get("attn_mask"),
                   average_attn_weights=average)
        return [out, w]
    return fwd


MHA_CASES = [
    # (options, self-attention?, masks)
    (dict(), True, ()),
    (dict(), False, ("attn_bool",)),
    (dict(batch_first=True), True, ("kpm",)),
    (dict(batch_first=True), False, ("kpm", "attn_float")),
    (dict(kdim=3, vdim=6), False, ("attn_3d",)),
    (dict(bias=False, need_weights=False), True, ("attn_bool", "kpm")),
    (dict(average_attn_weights=False), False, ()),
    (dict(add_bias_kv=True, add_zero_attn=True), False, ("kpm",)),
    (dict(kdim=3, vdim=6, batch_first=True), False, ("kpm",)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", range(len(MHA_CASES)))
def test_multihead_attention(case, dtype):
    extra, self_attn, masks = MHA_CASES[case]
    opts = dict(embed_dim=8, num_heads=2, **extra)
    m = build("MultiheadAttention", opts)
    L, S, B = 4, 5, 3
    S = L if self_attn else S
    bf = extra.get("batch_first", False)
    shape = lambda n, e: (B, n, e) if bf else (n, B, e)  # noqa: E731
    q = randn(*shape(L, 8))
    k = q if self_attn else randn(*shape(S, extra.get("kdim", 8)))
    v = q if self_attn else randn(*shape(S, extra.get("vdim", 8)))
    x = {"query": q} if self_attn else {"query": q, "key": k, "value": v}
    g = torch.Generator().manual_seed(case)
    if "kpm" in masks:
        kpm = torch.zeros(B, S, dtype=torch.bool)
        kpm[0, -1] = kpm[1, 0] = kpm[1, 2] = True
        x["key_padding_mask"] = kpm
    if "attn_bool" in masks:
        x["attn_mask"] = torch.rand(L, S, generator=g) > 0.7
        x["attn_mask"][:, 1] = False  # every query keeps a key
    if "attn_float" in masks:
        x["attn_mask"] = torch.randn(L, S, generator=g)
    if "attn_3d" in masks:
        x["attn_mask"] = torch.randn(B * 2, L, S, generator=g)
    if self_attn:
        grad_inputs = ["query"]
    else:
        grad_inputs = ["query", "key", "value"]
    fwd = mha_forward(extra.get("need_weights", True), extra.get("average_attn_weights", True))
    if self_attn:  # one tensor for q, k and v, like torch's self-attention call
        fwd0 = fwd
        fwd = lambda m, x: fwd0(m, dict(x, key=x["query"], value=x["query"]))  # noqa: E731
    del k, v
    compare(m, "MultiheadAttention", opts, x, fwd, dtype=dtype, grad_inputs=grad_inputs)


def test_multihead_attention_unbatched():
    opts = dict(embed_dim=6, num_heads=3)
    m = build("MultiheadAttention", opts)
    x = {"query": randn(4, 6), "key": randn(5, 6), "value": randn(5, 6),
         "key_padding_mask": torch.tensor([False, True, False, False, False])}
    compare(m, "MultiheadAttention", opts, x, mha_forward(), dtype=torch.float64)


LAYER_CASES = [
    dict(),
    dict(activation="gelu"),
    dict(norm_first=True),
    dict(norm_first=True, activation="gelu", batch_first=True),
]


def causal(n):
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", range(len(LAYER_CASES)))
def test_transformer_encoder_layer(case, dtype):
    opts = dict(d_model=8, nhead=2, dim_feedforward=16, **LAYER_CASES[case])
    m = build("TransformerEncoderLayer", opts)
    bf = opts.get("batch_first", False)
    src = randn(3, 5, 8) if bf else randn(5, 3, 8)
    kpm = torch.zeros(3, 5, dtype=torch.bool)
    kpm[1, 3:] = True
    x = {"src": src, "src_mask": causal(5), "src_key_padding_mask": kpm}
    fwd = lambda m, x: [m(x["src"], src_mask=x["src_mask"],  # noqa: E731
                          src_key_padding_mask=x["src_key_padding_mask"])]
    compare(m, "TransformerEncoderLayer", opts, x, fwd, dtype=dtype, grad_inputs=["src"])


def test_transformer_layers_train_mode_without_dropout():
    opts = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0)
    x = {"src": randn(5, 3, 8), "src_mask": causal(5)}
    fwd = lambda m, x: [m(x["src"], src_mask=x["src_mask"])]  # noqa: E731
    compare(build("TransformerEncoderLayer", opts), "TransformerEncoderLayer", opts, x, fwd,
            train=True, grad_inputs=["src"])
    x = {"tgt": randn(4, 2, 8), "memory": randn(6, 2, 8)}
    fwd = lambda m, x: [m(x["tgt"], x["memory"])]  # noqa: E731
    compare(build("TransformerDecoderLayer", opts), "TransformerDecoderLayer", opts, x, fwd,
            train=True)


@pytest.mark.parametrize("case", range(len(LAYER_CASES)))
def test_transformer_decoder_layer(case):
    opts = dict(d_model=8, nhead=4, dim_feedforward=12, **LAYER_CASES[case])
    m = build("TransformerDecoderLayer", opts)
    bf = opts.get("batch_first", False)
    tgt = randn(2, 4, 8) if bf else randn(4, 2, 8)
    mem = randn(2, 6, 8) if bf else randn(6, 2, 8)
    mkpm = torch.zeros(2, 6, dtype=torch.bool)
    mkpm[0, 4:] = True
    x = {"tgt": tgt, "memory": mem, "tgt_mask": causal(4), "memory_key_padding_mask": mkpm}
    fwd = lambda m, x: [m(x["tgt"], x["memory"], tgt_mask=x["tgt_mask"],  # noqa: E731
                          memory_key_padding_mask=x["memory_key_padding_mask"])]
    compare(m, "TransformerDecoderLayer", opts, x, fwd, grad_inputs=["tgt", "memory"])


def test_transformer_encoder_stack():
    opts = dict(d_model=8, nhead=2, dim_feedforward=16, num_layers=2, norm=True)
    torch.manual_seed(0)
    layer = tnn.TransformerEncoderLayer(8, 2, 16)
    m = tnn.TransformerEncoder(layer, 2, norm=tnn.LayerNorm(8))
    with torch.no_grad():  # distinct layers, so a wrong layer order would show
        for p in m.layers[1].parameters():
            p.add_(0.01 * torch.randn_like(p))
    x = {"src": randn(5, 2, 8), "mask": causal(5)}
    fwd = lambda m, x: [m(x["src"], mask=x["mask"])]  # noqa: E731
    compare(m, "TransformerEncoder", opts, x, fwd, grad_inputs=["src"])


@pytest.mark.parametrize("extra", [dict(), dict(batch_first=True, norm_first=True,
                                                activation="gelu")])
def test_transformer(extra):
    opts = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                dim_feedforward=16, **extra)
    m = build("Transformer", opts)
    bf = extra.get("batch_first", False)
    src = randn(2, 5, 8) if bf else randn(5, 2, 8)
    tgt = randn(2, 4, 8) if bf else randn(4, 2, 8)
    kpm = torch.zeros(2, 5, dtype=torch.bool)
    kpm[1, 4] = True
    x = {"src": src, "tgt": tgt, "tgt_mask": tnn.Transformer.generate_square_subsequent_mask(4),
         "src_key_padding_mask": kpm, "memory_key_padding_mask": kpm}
    fwd = lambda m, x: [m(x["src"], x["tgt"], tgt_mask=x["tgt_mask"],  # noqa: E731
                          src_key_padding_mask=x["src_key_padding_mask"],
                          memory_key_padding_mask=x["memory_key_padding_mask"])]
    compare(m, "Transformer", opts, x, fwd, grad_inputs=["src", "tgt"])


# ---------------------------------------------------------------- initialization and printing

INIT_CASES = [
    ("Linear", dict(in_features=200, out_features=100)),
    ("Conv2d", dict(in_channels=16, out_channels=32, kernel_size=3)),
    ("Bilinear", dict(in1_features=20, in2_features=30, out_features=40)),
    ("Embedding", dict(num_embeddings=100, embedding_dim=16)),
    ("RNN", dict(input_size=32, hidden_size=64)),
    ("LSTM", dict(input_size=32, hidden_size=64, num_layers=2, bidirectional=True, proj_size=16)),
    ("GRU", dict(input_size=48, hidden_size=40)),
    ("MultiheadAttention", dict(embed_dim=64, num_heads=4)),
    ("MultiheadAttention", dict(embed_dim=64, num_heads=4, kdim=32, vdim=48, add_bias_kv=True)),
    ("TransformerEncoderLayer", dict(d_model=32, nhead=4, dim_feedforward=64)),
    ("Transformer", dict(d_model=32, nhead=4, num_encoder_layers=1, num_decoder_layers=1,
                         dim_feedforward=64)),
]


@pytest.mark.parametrize("case", range(len(INIT_CASES)))
def test_default_init_statistics(case):
    """A fresh C++ module has torch's parameter names and shapes, and each parameter's
    distribution (mean, std, range) matches a fresh torch module's within sampling error."""
    name, opts = INIT_CASES[case]
    ref = build(name, opts).state_dict()
    got = run_cpp({"module": name, "options": opts, "load_state": False, "forward": False,
                   "seed": 0}, {})
    got = {k[len("state_after."):]: v for k, v in got.items()}
    assert list(got) == list(ref), f"names differ:\n{list(got)}\n{list(ref)}"
    for k, t in ref.items():
        c = got[k].double()
        t = t.double()
        assert c.shape == t.shape, k
        n = t.numel()
        ts, cs = t.std().item() if n > 1 else 0.0, c.std().item() if n > 1 else 0.0
        if ts == 0:
            assert torch.equal(c, t), f"{k}: constant init differs"
            continue
        assert abs(c.mean() - t.mean()) <= 5 * ts / math.sqrt(n) + 1e-12, f"{k}: mean"
        assert abs(cs - ts) <= (0.1 if n >= 500 else 0.25) * ts, f"{k}: std {cs} vs {ts}"
        if n >= 1000:
            ca, ta = c.abs().max().item(), t.abs().max().item()
            assert abs(ca - ta) <= 0.2 * ta, f"{k}: range {ca} vs {ta}"


def tree(text, prefix=""):
    """The "(name): Type" lines of a module print, with the namespace removed."""
    out = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("(") and "): " in s:
            child, rest = s.split("): ", 1)
            kind = rest.split("(")[0].replace(prefix, "")
            # torch's out_proj is a Linear subclass that only marks it for quantization.
            out.append(child + "): " + kind.replace("NonDynamicallyQuantizableLinear", "Linear"))
    return out


@pytest.mark.parametrize("case", [5, 7, 10])
def test_print_tree_matches_torch(case):
    name, opts = INIT_CASES[case]
    _, text = run_cpp({"module": name, "options": opts, "load_state": False, "forward": False,
                       "print": True}, {}, capture=True)
    assert text.startswith(f"retorch::nn::{name}("), text
    assert tree(text, "retorch::nn::") == tree(repr(build(name, opts))), text
    if name == "LSTM":
        assert text.strip() == (
            "retorch::nn::LSTM(input_size=32, hidden_size=64, num_layers=2, bias=true, "
            "batch_first=false, dropout=0, bidirectional=true, proj_size=16)")
