"""retorch.nn's Python layers against torch.nn: same weights in, same outputs and gradients out."""
import numpy as np
import pytest
import torch

import retorch
import retorch.nn as rnn

tnn = torch.nn


def to_rt(t):
    return retorch.from_numpy(t.detach().numpy().copy())


def to_np(t):
    return np.array(t.detach().numpy())


def copy_state(src, dst):
    """torch module's state into the retorch module (keys must match exactly)."""
    sd = {k: to_rt(v) for k, v in src.state_dict().items()}
    assert set(sd) == set(dst.state_dict()), (sorted(sd), sorted(dst.state_dict()))
    dst.load_state_dict(sd)


def flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    return [out] if out is not None and hasattr(out, "shape") else []


# (name, constructor args, kwargs, input shapes, integer-input high or None)
CASES = [
    ("Linear", (5, 3), {}, [(4, 5)], None),
    ("Linear", (5, 3), {"bias": False}, [(2, 4, 5)], None),
    ("Bilinear", (3, 4, 2), {}, [(5, 3), (5, 4)], None),
    ("Conv1d", (3, 4, 3), {"padding": 1, "stride": 2}, [(2, 3, 9)], None),
    ("Conv2d", (3, 6, 3), {"padding": 1}, [(2, 3, 8, 8)], None),
    ("Conv2d", (4, 6, (3, 2)), {"stride": 2, "groups": 2, "bias": False}, [(2, 4, 9, 8)], None),
    ("Conv2d", (3, 4, 3), {"padding": "same", "dilation": 2}, [(1, 3, 7, 7)], None),
    ("Conv2d", (3, 4, 3), {"padding": 1, "padding_mode": "reflect"}, [(1, 3, 6, 6)], None),
    ("Conv2d", (3, 4, 3), {"padding": 2, "padding_mode": "replicate"}, [(1, 3, 6, 6)], None),
    ("ConvTranspose1d", (3, 2, 3), {"stride": 2}, [(2, 3, 5)], None),
    ("ConvTranspose2d", (4, 2, 3), {"stride": 2, "padding": 1, "output_padding": 1},
     [(2, 4, 5, 5)], None),
    ("MaxPool1d", (2,), {}, [(2, 3, 8)], None),
    ("MaxPool2d", (2,), {}, [(2, 3, 8, 8)], None),
    ("MaxPool2d", (3, 2, 1), {"ceil_mode": True}, [(2, 3, 9, 9)], None),
    ("AvgPool1d", (3,), {"stride": 2}, [(2, 3, 9)], None),
    ("AvgPool2d", (2,), {}, [(2, 3, 8, 8)], None),
    ("AdaptiveAvgPool1d", (4,), {}, [(2, 3, 9)], None),
    ("AdaptiveAvgPool2d", ((3, None),), {}, [(2, 3, 9, 7)], None),
    ("AdaptiveMaxPool2d", (3,), {}, [(2, 3, 9, 7)], None),
    ("BatchNorm1d", (5,), {}, [(8, 5)], None),
    ("BatchNorm1d", (5,), {"affine": False}, [(4, 5, 3)], None),
    ("BatchNorm2d", (3,), {"momentum": None}, [(4, 3, 5, 5)], None),
    ("InstanceNorm2d", (3,), {"affine": True}, [(2, 3, 5, 5)], None),
    ("LayerNorm", ((4, 5),), {}, [(3, 4, 5)], None),
    ("GroupNorm", (2, 6), {}, [(3, 6, 4)], None),
    ("LocalResponseNorm", (3,), {}, [(2, 6, 4, 4)], None),
    ("Embedding", (10, 4), {"padding_idx": 0}, [(3, 5)], 10),
    ("EmbeddingBag", (10, 4), {"mode": "sum"}, [(3, 5)], 10),
    ("ReLU", (), {}, [(3, 7)], None),
    ("GELU", (), {"approximate": "tanh"}, [(3, 7)], None),
    ("LeakyReLU", (0.2,), {}, [(3, 7)], None),
    ("ELU", (0.5,), {}, [(3, 7)], None),
    ("Softplus", (2.0, 10.0), {}, [(3, 7)], None),
    ("Hardtanh", (-0.5, 0.5), {}, [(3, 7)], None),
    ("Softmax", (1,), {}, [(3, 7)], None),
    ("LogSoftmax", (-1,), {}, [(3, 7)], None),
    ("Softmin", (0,), {}, [(3, 7)], None),
    ("PReLU", (3,), {}, [(2, 3, 4)], None),
    ("GLU", (), {}, [(3, 8)], None),
    ("SiLU", (), {}, [(3, 7)], None),
    ("Mish", (), {}, [(3, 7)], None),
    ("Tanh", (), {}, [(3, 7)], None),
    ("Sigmoid", (), {}, [(3, 7)], None),
    ("Hardswish", (), {}, [(3, 7)], None),
    ("Threshold", (0.1, 20.0), {}, [(3, 7)], None),
    ("Flatten", (), {}, [(2, 3, 4)], None),
    ("Unflatten", (1, (2, 6)), {}, [(3, 12)], None),
    ("ZeroPad2d", ((1, 2, 0, 1),), {}, [(1, 2, 3, 3)], None),
    ("ReflectionPad2d", (1,), {}, [(1, 2, 3, 3)], None),
    ("ReplicationPad1d", ((2, 1),), {}, [(1, 2, 4)], None),
    ("Upsample", (), {"scale_factor": 2, "mode": "nearest"}, [(1, 2, 3, 3)], None),
    ("Upsample", (), {"size": (5, 7), "mode": "bilinear", "align_corners": False},
     [(1, 2, 3, 3)], None),
    ("PixelShuffle", (2,), {}, [(1, 8, 3, 3)], None),
    ("CosineSimilarity", (), {}, [(4, 5), (4, 5)], None),
    ("PairwiseDistance", (), {}, [(4, 5), (4, 5)], None),
    ("MultiheadAttention", (8, 2), {}, [(5, 3, 8), (6, 3, 8), (6, 3, 8)], None),
    ("MultiheadAttention", (8, 2), {"batch_first": True, "kdim": 4, "vdim": 6},
     [(3, 5, 8), (3, 6, 4), (3, 6, 6)], None),
    ("RNN", (4, 6), {"num_layers": 2, "nonlinearity": "relu"}, [(5, 3, 4)], None),
    ("LSTM", (4, 6), {"batch_first": True, "bidirectional": True}, [(3, 5, 4)], None),
    ("LSTM", (4, 6), {"proj_size": 3, "num_layers": 2}, [(5, 3, 4)], None),
    ("GRU", (4, 6), {"bias": False}, [(5, 4)], None),
    ("RNNCell", (4, 6), {}, [(3, 4)], None),
    ("LSTMCell", (4, 6), {}, [(3, 4)], None),
    ("GRUCell", (4, 6), {}, [(3, 4)], None),
    ("TransformerEncoderLayer", (8, 2, 16, 0.0), {}, [(5, 3, 8)], None),
    ("TransformerDecoderLayer", (8, 2, 16, 0.0), {"norm_first": True, "batch_first": True},
     [(3, 5, 8), (3, 4, 8)], None),
]


def _inputs(shapes, high, rng):
    if high is not None:
        arrs = [rng.integers(0, high, size=s).astype(np.int64) for s in shapes]
        return [torch.from_numpy(a) for a in arrs], [retorch.from_numpy(a.copy()) for a in arrs]
    arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ts = [torch.from_numpy(a).requires_grad_() for a in arrs]
    rs = [retorch.from_numpy(a.copy()).requires_grad_() for a in arrs]
    return ts, rs


@pytest.mark.parametrize("name,args,kwargs,shapes,high", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_layer_matches_torch(name, args, kwargs, shapes, high, rng):
    tm = getattr(tnn, name)(*args, **kwargs)
    rm = getattr(rnn, name)(*args, **kwargs)
    assert type(rm).__name__ == name
    copy_state(tm, rm)
    assert [n for n, _ in tm.named_parameters()] == [n for n, _ in rm.named_parameters()]
    tx, rx = _inputs(shapes, high, rng)
    tout, rout = flat(tm(*tx)), flat(rm(*rx))
    assert len(tout) == len(rout)
    for a, b in zip(tout, rout):
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-5, atol=1e-5)
    # Buffers (running stats) advance the same way.
    for (k, a), (_, b) in zip(sorted(tm.state_dict().items()), sorted(rm.state_dict().items())):
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-5, atol=1e-6, err_msg=k)
    if not any(t.requires_grad for t in tout):
        return
    grads = [rng.standard_normal(tuple(t.shape)).astype(np.float32) for t in tout]
    torch.autograd.backward([t for t in tout], [torch.from_numpy(g) for g in grads])
    retorch.autograd.backward(rout, [retorch.from_numpy(g.copy()) for g in grads])
    for a, b in zip(tx, rx):
        if a.grad is not None:
            np.testing.assert_allclose(to_np(b.grad), to_np(a.grad), rtol=1e-4, atol=1e-5)
    for (n, a), (_, b) in zip(tm.named_parameters(), rm.named_parameters()):
        np.testing.assert_allclose(to_np(b.grad), to_np(a.grad), rtol=1e-4, atol=1e-5,
                                   err_msg=n)


@pytest.mark.parametrize("name,args,kwargs", [
    ("Linear", (5, 3), {}), ("Conv2d", (3, 6, 3), {}), ("LSTM", (4, 6), {"num_layers": 2}),
    ("BatchNorm2d", (3,), {}), ("Embedding", (10, 4), {"padding_idx": 1}),
    ("MultiheadAttention", (8, 2), {}), ("LayerNorm", (6,), {}),
    ("TransformerEncoderLayer", (8, 2, 16), {}), ("Transformer", (8, 2, 1, 1, 16), {}),
])
def test_same_structure_and_repr_as_torch(name, args, kwargs):
    tm = getattr(tnn, name)(*args, **kwargs)
    rm = getattr(rnn, name)(*args, **kwargs)
    assert [(k, tuple(v.shape)) for k, v in tm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in rm.state_dict().items()]
    assert repr(rm) == repr(tm)


def test_init_statistics_match_torch():
    # Default initializers draw from the same distributions (bounds and spread) as torch's.
    torch.manual_seed(0)
    retorch.manual_seed(0)
    tw = tnn.Linear(400, 300).weight.detach().numpy()
    rw = to_np(rnn.Linear(400, 300).weight)
    assert abs(np.abs(rw).max() - np.abs(tw).max()) < 1e-3
    assert abs(rw.std() - tw.std()) < 1e-3
    te = tnn.Embedding(500, 64).weight.detach().numpy()
    re = to_np(rnn.Embedding(500, 64).weight)
    assert abs(re.std() - te.std()) < 0.02


def test_packed_lstm_matches_torch(rng):
    x = rng.standard_normal((6, 3, 4)).astype(np.float32)
    lengths = [6, 2, 4]
    tm, rm = tnn.LSTM(4, 5, bidirectional=True), rnn.LSTM(4, 5, bidirectional=True)
    copy_state(tm, rm)
    tp = tnn.utils.rnn.pack_padded_sequence(torch.from_numpy(x), lengths, enforce_sorted=False)
    rp = rnn.utils.rnn.pack_padded_sequence(retorch.from_numpy(x), lengths, enforce_sorted=False)
    np.testing.assert_allclose(to_np(rp.data), to_np(tp.data))
    assert rp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    (to, (th, tc)), (ro, (rh, rc)) = tm(tp), rm(rp)
    assert isinstance(ro, rnn.utils.rnn.PackedSequence)
    tpad, tl = tnn.utils.rnn.pad_packed_sequence(to, batch_first=True)
    rpad, rl = rnn.utils.rnn.pad_packed_sequence(ro, batch_first=True)
    np.testing.assert_allclose(to_np(rpad), to_np(tpad), rtol=1e-5, atol=1e-6)
    assert rl.tolist() == tl.tolist()
    np.testing.assert_allclose(to_np(rh), to_np(th), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_np(rc), to_np(tc), rtol=1e-5, atol=1e-6)


def test_losses_match_torch(rng):
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = rng.integers(0, 5, size=6)
    p = rng.random((6, 5)).astype(np.float32)
    w = rng.random(5).astype(np.float32) + 0.5
    cases = [
        ("CrossEntropyLoss", {}, x, y), ("CrossEntropyLoss", {"weight": w, "label_smoothing": 0.1},
                                         x, y),
        ("NLLLoss", {"reduction": "sum", "ignore_index": 2}, x, y),
        ("MSELoss", {}, x, p), ("L1Loss", {"reduction": "none"}, x, p),
        ("SmoothL1Loss", {"beta": 0.5}, x, p), ("HuberLoss", {"delta": 0.7}, x, p),
        ("BCELoss", {}, 1 / (1 + np.exp(-x)), p), ("BCEWithLogitsLoss", {"pos_weight": w}, x, p),
        ("KLDivLoss", {"reduction": "batchmean"}, x, p), ("SoftMarginLoss", {}, x, np.sign(p - .5)),
        ("MultiMarginLoss", {"margin": 0.5}, x, y),
        ("HingeEmbeddingLoss", {}, x, np.sign(p - .5)),
        ("PoissonNLLLoss", {}, x, p),
    ]
    for name, kw, inp, tgt in cases:
        tkw = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        rkw = {k: retorch.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v
               for k, v in kw.items()}
        ti = torch.from_numpy(np.ascontiguousarray(inp, np.float32)).requires_grad_()
        ri = retorch.from_numpy(np.ascontiguousarray(inp, np.float32).copy()).requires_grad_()
        tt, rt = torch.from_numpy(np.ascontiguousarray(tgt)), retorch.from_numpy(
            np.ascontiguousarray(tgt).copy())
        tl, rl = getattr(tnn, name)(**tkw)(ti, tt), getattr(rnn, name)(**rkw)(ri, rt)
        np.testing.assert_allclose(to_np(rl), to_np(tl), rtol=1e-5, atol=1e-6, err_msg=name)
        tl.sum().backward()
        rl.sum().backward()
        np.testing.assert_allclose(to_np(ri.grad), to_np(ti.grad), rtol=1e-4, atol=1e-6,
                                   err_msg=name)
