"""The C++ layers, activations and losses that predate the recurrent modules, against torch.nn
through the nn_oracle harness: outputs, input and parameter gradients, buffers after forward."""
import pytest
import torch
import torch.nn as tnn

from nn_oracle_harness import compare


def build(name, options, seed=0):
    torch.manual_seed(seed)
    return getattr(tnn, name)(**options)


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=g(seed), dtype=torch.float64)


def single(m, x):
    return [m(x["input"])]


LAYER_CASES = [
    ("Linear", dict(in_features=5, out_features=3), (4, 5)),
    ("Linear", dict(in_features=5, out_features=3, bias=False), (2, 3, 5)),
    ("Conv1d", dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1), (2, 4, 11)),
    ("Conv1d", dict(in_channels=4, out_channels=4, kernel_size=3, padding="same", groups=2,
                    dilation=2), (2, 4, 9)),
    ("Conv2d", dict(in_channels=3, out_channels=4, kernel_size=3), (2, 3, 7, 6)),
    ("Conv2d", dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=(2, 1),
                    padding=(1, 2), groups=2, bias=False), (2, 4, 7, 6)),
    ("Conv2d", dict(in_channels=3, out_channels=4, kernel_size=3, padding="same"), (2, 3, 6, 5)),
    ("Conv2d", dict(in_channels=3, out_channels=4, kernel_size=3, padding="valid"), (1, 3, 6, 5)),
    ("Conv2d", dict(in_channels=2, out_channels=3, kernel_size=3, padding=1,
                    padding_mode="reflect"), (2, 2, 5, 5)),
    ("Conv2d", dict(in_channels=2, out_channels=3, kernel_size=3, padding=2,
                    padding_mode="replicate"), (2, 2, 5, 5)),
    ("Conv2d", dict(in_channels=2, out_channels=3, kernel_size=3, padding=1,
                    padding_mode="circular"), (2, 2, 5, 5)),
    ("ConvTranspose2d", dict(in_channels=4, out_channels=3, kernel_size=3, stride=2, padding=1,
                             output_padding=1), (2, 4, 4, 5)),
    ("ConvTranspose2d", dict(in_channels=4, out_channels=6, kernel_size=2, groups=2,
                             bias=False), (1, 4, 3, 3)),
    ("MaxPool2d", dict(kernel_size=3, stride=2, padding=1), (2, 3, 7, 6)),
    ("MaxPool2d", dict(kernel_size=2, ceil_mode=True), (2, 3, 5, 5)),
    ("AvgPool2d", dict(kernel_size=3, stride=2, padding=1, count_include_pad=False), (2, 3, 7, 6)),
    ("AvgPool2d", dict(kernel_size=2, ceil_mode=True, divisor_override=3), (2, 3, 5, 5)),
    ("AdaptiveAvgPool2d", dict(output_size=(3, 2)), (2, 3, 7, 5)),
    ("AdaptiveMaxPool2d", dict(output_size=3), (2, 3, 7, 5)),
    ("LayerNorm", dict(normalized_shape=[5]), (3, 4, 5)),
    ("LayerNorm", dict(normalized_shape=[4, 5], eps=1e-3), (3, 4, 5)),
    ("GroupNorm", dict(num_groups=2, num_channels=6), (3, 6, 4, 2)),
    ("GroupNorm", dict(num_groups=3, num_channels=6, affine=False), (3, 6, 5)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", range(len(LAYER_CASES)))
def test_layer(case, dtype):
    name, opts, shape = LAYER_CASES[case]
    m = build(name, opts)
    with torch.no_grad():  # non-trivial affine parameters for the norms
        for p in m.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g(case)).to(p.dtype))
    compare(m, name, opts, {"input": randn(*shape, seed=case)}, single, dtype=dtype)


def test_bilinear():
    opts = dict(in1_features=4, in2_features=5, out_features=3)
    compare(build("Bilinear", opts), "Bilinear", opts,
            {"input1": randn(6, 4), "input2": randn(6, 5, seed=1)},
            lambda m, x: [m(x["input1"], x["input2"])], dtype=torch.float64)


BN_CASES = [
    ("BatchNorm1d", dict(num_features=4), (6, 4)),
    ("BatchNorm1d", dict(num_features=4, momentum=None), (5, 4, 3)),
    ("BatchNorm2d", dict(num_features=3, momentum=0.3, eps=1e-3), (4, 3, 5, 2)),
    ("BatchNorm2d", dict(num_features=3, affine=False), (4, 3, 2, 2)),
]


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("case", range(len(BN_CASES)))
def test_batch_norm(case, train):
    name, opts, shape = BN_CASES[case]
    m = build(name, opts)
    with torch.no_grad():  # non-default running stats so eval mode uses them visibly
        m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g(1)))
        m.running_var.copy_(torch.rand(m.running_var.shape, generator=g(2)) + 0.5)
        m.num_batches_tracked.fill_(3)
    # compare() also checks running_mean/var/num_batches_tracked after the forward.
    compare(m, name, opts, {"input": randn(*shape, seed=case)}, single, train=train)


def test_embedding():
    opts = dict(num_embeddings=10, embedding_dim=4, padding_idx=2)
    idx = torch.tensor([[1, 2, 3, 2], [9, 0, 2, 1], [4, 4, 5, 6]])
    compare(build("Embedding", opts), "Embedding", opts, {"input": idx}, single)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    opts = dict(num_embeddings=10, embedding_dim=3, mode=mode)
    x = {"input": torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), "offsets": torch.tensor([0, 3, 4])}
    if mode == "sum":
        x["per_sample_weights"] = randn(8)
    fwd = lambda m, x: [m(x["input"], x["offsets"],  # noqa: E731
                          per_sample_weights=x.get("per_sample_weights"))]
    compare(build("EmbeddingBag", opts), "EmbeddingBag", opts, x, fwd)


def test_embedding_bag_padding_idx_2d():
    opts = dict(num_embeddings=10, embedding_dim=3, mode="mean", padding_idx=0)
    x = {"input": torch.tensor([[1, 0, 4], [0, 0, 3]])}
    compare(build("EmbeddingBag", opts), "EmbeddingBag", opts, x,
            lambda m, x: [m(x["input"])])


ACTIVATIONS = [
    ("ReLU", {}), ("ReLU6", {}), ("SELU", {}), ("SiLU", {}), ("Mish", {}), ("Sigmoid", {}),
    ("Tanh", {}), ("Softsign", {}), ("Hardswish", {}), ("Hardsigmoid", {}), ("LogSigmoid", {}),
    ("Tanhshrink", {}), ("Softmax2d", {}), ("Identity", {}),
    ("LeakyReLU", dict(negative_slope=0.2)), ("ELU", dict(alpha=0.7)), ("CELU", dict(alpha=1.3)),
    ("GELU", {}), ("GELU", dict(approximate="tanh")), ("Softplus", dict(beta=2.0, threshold=1.5)),
    ("Hardtanh", dict(min_val=-0.5, max_val=0.8)), ("Softshrink", dict(lambd=0.3)),
    ("Hardshrink", dict(lambd=0.4)), ("RReLU", dict(lower=0.1, upper=0.3)), ("GLU", dict(dim=1)),
    ("Softmax", dict(dim=1)), ("LogSoftmax", dict(dim=-1)), ("Softmin", dict(dim=0)),
    ("Threshold", dict(threshold=0.1, value=-2.0)), ("PReLU", {}),
    ("PReLU", dict(num_parameters=4, init=0.1)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", range(len(ACTIVATIONS)))
def test_activation(case, dtype):
    name, opts = ACTIVATIONS[case]
    x = randn(3, 4, 5, 2, seed=case)
    compare(build(name, opts), name, opts, {"input": x}, single, dtype=dtype)


def ints(high, *shape, seed=0):
    return torch.randint(0, high, shape, generator=g(seed))


def signs(*shape, seed=0):
    return ints(2, *shape, seed=seed) * 2 - 1


def probs(*shape, seed=0):
    return torch.rand(*shape, generator=g(seed), dtype=torch.float64) * 0.9 + 0.05


def loss_cases():
    x, t = randn(4, 5), randn(4, 5, seed=1)
    target = torch.tensor([0, 4, 2, 1])
    w = probs(5, seed=3) + 0.5
    logp = torch.log_softmax(randn(4, 5), 1)
    ctc = dict(log_probs=torch.log_softmax(randn(10, 2, 5), 2),
               targets=torch.tensor([[1, 2, 2, 4], [3, 1, 4, 0]]),
               input_lengths=torch.tensor([10, 8]), target_lengths=torch.tensor([4, 3]))
    return [
        ("L1Loss", {}, dict(input=x, target=t), None),
        ("MSELoss", dict(reduction="sum"), dict(input=x, target=t), None),
        ("SmoothL1Loss", dict(beta=0.5), dict(input=x, target=t), None),
        ("HuberLoss", dict(delta=0.7, reduction="none"), dict(input=x, target=t), None),
        ("NLLLoss", dict(ignore_index=2), dict(input=logp, target=target), dict(weight=w)),
        ("NLLLoss", dict(reduction="sum"), dict(input=randn(4, 5, 3), target=ints(5, 4, 3)), None),
        ("CrossEntropyLoss", dict(ignore_index=1, label_smoothing=0.1),
         dict(input=x, target=target), dict(weight=w)),
        ("CrossEntropyLoss", dict(reduction="none"),
         dict(input=randn(2, 5, 3), target=ints(5, 2, 3)), None),
        ("CrossEntropyLoss", dict(label_smoothing=0.2),
         dict(input=x, target=torch.softmax(t, 1)), None),
        ("BCELoss", {}, dict(input=probs(4, 5), target=probs(4, 5, seed=2)), dict(weight=w)),
        ("BCEWithLogitsLoss", {}, dict(input=x, target=probs(4, 5, seed=2)),
         dict(weight=w, pos_weight=probs(5, seed=4) * 3)),
        ("KLDivLoss", dict(reduction="batchmean"),
         dict(input=logp, target=torch.softmax(t, 1)), None),
        ("KLDivLoss", dict(reduction="sum", log_target=True),
         dict(input=logp, target=torch.log_softmax(t, 1)), None),
        ("PoissonNLLLoss", {}, dict(input=x, target=probs(4, 5) * 4), None),
        ("PoissonNLLLoss", dict(log_input=False, full=True),
         dict(input=probs(4, 5) * 3, target=probs(4, 5, seed=2) * 4), None),
        ("SoftMarginLoss", {}, dict(input=x, target=signs(4, 5).double()), None),
        ("MultiMarginLoss", dict(p=2, margin=0.5), dict(input=x, target=target), dict(weight=w)),
        ("MultiMarginLoss", {}, dict(input=x, target=target), None),
        ("HingeEmbeddingLoss", dict(margin=0.5), dict(input=x, target=signs(4, 5).double()), None),
        ("MarginRankingLoss", dict(margin=0.2),
         dict(input1=randn(6), input2=randn(6, seed=1), target=signs(6).double()), None),
        ("CosineEmbeddingLoss", dict(margin=0.1),
         dict(input1=x, input2=t, target=signs(4).double()), None),
        ("TripletMarginLoss", dict(margin=0.5, swap=True),
         dict(anchor=x, positive=t, negative=randn(4, 5, seed=2)), None),
        ("TripletMarginLoss", dict(p=1.0),
         dict(anchor=x, positive=t, negative=randn(4, 5, seed=2)), None),
        ("CTCLoss", {}, ctc, None),
        ("CTCLoss", dict(reduction="sum", blank=0, zero_infinity=True), ctc, None),
    ]


LOSSES = loss_cases()
FIRST_ARG = {"MarginRankingLoss": "input1", "CosineEmbeddingLoss": "input1",
             "TripletMarginLoss": "anchor", "CTCLoss": "log_probs"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", range(len(LOSSES)))
def test_loss(case, dtype):
    name, opts, inputs, opt_tensors = LOSSES[case]
    opt_tensors = {k: v.to(dtype) for k, v in (opt_tensors or {}).items()}
    m = build(name, dict(opts, **opt_tensors))
    names = list(inputs)
    grad_inputs = [names[0]] if name not in FIRST_ARG else \
        [n for n in names if inputs[n].is_floating_point() and n != "target"]
    compare(m, name, opts, inputs, lambda m, x: [m(*[x[n] for n in names])], dtype=dtype,
            option_tensors=opt_tensors, grad_inputs=grad_inputs)
