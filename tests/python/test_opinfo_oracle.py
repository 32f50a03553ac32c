"""Every op of torch 1.13's OpInfo database that retorch has, run on torch's own sample inputs:
values in every dtype both have (method and in-place forms too), the out= form and float64
gradients (every sample) must match torch's, and the arguments torch rejects (its error inputs)
must raise torch's exception with its message (opinfo_harness.py); then torch's reference
inputs, its larger sample sets. KNOWN, KNOWN_VARIANTS, KNOWN_GRADS, KNOWN_ERRORS and KNOWN_REF
list what is left out, each with the reason."""
import pytest

import opinfo_harness as h

OP_DB = h.load_op_db()
if OP_DB is None:
    pytest.skip("torch's OpInfo database (torch.testing._internal) is not importable",
                allow_module_level=True)

# Whole families retorch does not have: complex and sparse tensors, FFTs, torch's jiterator
# (CUDA-only generated kernels), the masked prototype, private ops.
ABSENT_PREFIXES = ("fft.", "_masked.", "masked.", "sparse.", "jiterator_", "to_sparse",
                   "view_as_real", "view_as_complex", "polar", "complex", "chalf", "stft", "istft",
                   "nn.functional._scaled_dot_product_attention", "linalg.eig", "linalg.eigvals",
                   "linalg.ldl_")

RANDOM = "draws random numbers: the same seed gives torch's generator's numbers, not these"
UNINITIALIZED = "returns uninitialized memory"
INTS = ("int64", "int32", "int16", "int8", "uint8")
TIES = "which of equal elements comes first is unspecified in torch (its cpu kernels' detail)"
# name (OpInfo name, with its variant after a dot) -> (what is left out, why). "all" leaves the
# op out; "grad" only its gradients; a tuple of dtype names only those dtypes' values.
KNOWN = {
    **{n: ("all", RANDOM) for n in (
        "bernoulli", "multinomial", "normal", "normal.number_mean", "uniform", "rand_like",
        "randn_like", "randint_like", "randn", "nn.functional.dropout", "nn.functional.dropout2d",
        "nn.functional.dropout3d", "nn.functional.feature_alpha_dropout.with_train",
        "nn.functional.alpha_dropout", "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
        "nn.functional.fractional_max_pool3d", "svd_lowrank", "pca_lowrank")},
    **{n: ("all", UNINITIALIZED) for n in ("empty", "empty_like", "new_empty",
                                           "new_empty_strided")},
    **{n: (("int64", "bool", "bfloat16", "int32", "int16", "int8", "uint8", "float16"), TIES)
       for n in ("topk", "kthvalue", "mode", "sort", "argsort", "msort")},
    "unique": ("all", "sorted=False leaves the order to the implementation (torch: a hash set)"),
    "__rpow__": ("grad", "torch's __rpow__ copies its other operand with torch.tensor(), "
                         "detached: no gradient reaches it"),
    "linspace": (INTS, "torch's integer linspace truncates values its vectorized kernel steps "
                       "from each block's first lane, so some differ by 1 from "
                       "trunc(start + i * step) (retorch's), depending on the SIMD width"),
    "as_strided_scatter": ("grad", "torch 1.13's gradient for the input is wrong: it leaves "
                                   "uninitialized memory where the source was scattered "
                                   "(retorch's is zero there, grad elsewhere)"),
    "cov": (("float64",), "with float32 aweights torch sums the weights in float32 one by one "
                          "(retorch's float32 sum rounds once), and the normalisation's "
                          "cancellation makes that one-ulp difference 2e-5"),
    "native_layer_norm": (("bfloat16",), "torch's bfloat16 layer norm of a single element is off "
                                         "by the mean (it gives -x + bias, not bias)"),
    "nn.functional.layer_norm": (("bfloat16",), "as native_layer_norm"),
    **{n: (INTS, "polygamma at the negative integer poles: torch's float32 evaluation gives "
                 "1e16, retorch's double evaluation rounded 1e32; both meaningless")
       for n in ("polygamma.polygamma_n_0", "polygamma.polygamma_n_1", "polygamma.polygamma_n_2",
                 "polygamma.polygamma_n_3", "polygamma.polygamma_n_4",
                 "special.polygamma.special_polygamma_n_0")},
    "addr": (("float16",), "torch's float16 addr rounds its intermediate products to float16: "
                          "one element in 50 of a sample differs from retorch's by 2 ulps"),
    "einsum": (("int32", "int16", "int8", "uint8"), "torch's einsum of one operand with a summed "
                                                   "index ('iji->j') goes through sum, which "
                                                   "gives int64; retorch keeps the input's dtype"),
    **{n: (("int8", "uint8", "int16", "int32"), "torch adds neighbouring integer samples in their "
                                                "own dtype (wrapping around) before scaling; "
                                                "retorch promotes first")
       for n in ("trapz", "trapezoid", "cumulative_trapezoid")},
    **{n: (("float16",), "float16 norms of high order: torch's float16 kernel overflows to inf "
                         "raising elements to the power; retorch's accumulates in float32")
       for n in ("dist", "nn.functional.pairwise_distance", "linalg.vector_norm", "norm",
                 "linalg.norm", "nn.functional.normalize", "cdist")},
}


# name -> why its method and in-place variants (Tensor.name, Tensor.name_) are left out.
KNOWN_VARIANTS = {
    "addbmm": "torch 1.13's addbmm_ resizes an input that only broadcasts to the result ([1] "
              "becomes [5, 10]); retorch refuses it, as torch's other in-place ops do",
}
# name -> (the samples whose float64 gradients are left out, by number; why).
KNOWN_GRADS = {
    "cov": ((37,), "float32 aweights with a float64 input: torch sums the weights in float32, as "
                   "in KNOWN['cov']"),
    "linalg.det.singular": ((25,), "a matrix whose computed determinant is exactly 0: torch 1.13 "
                                   "(without create_graph) gives a zero gradient; retorch's is "
                                   "the cofactor matrix, as torch's create_graph=True gives"),
}
OVERLAP = ("out= sharing memory with an input: torch refuses ('unsupported operation'); retorch "
           "computes the result first and then writes out, so the values are right")
# name -> (the error inputs left out, by number, or "all"; why).
KNOWN_ERRORS = {
    **{n: ("all", OVERLAP) for n in ("kthvalue", "masked_select", "index_select", "take")},
    "gather": ((2, 7, 8), OVERLAP + "; and out's dtype may differ from the input's if the result "
                                    "casts to it (torch wants the same dtype)"),
    "cat": ((6, 8), OVERLAP),
    "masked_fill": ((1,), "a complex fill value: retorch has no complex numbers"),
    **{n: ("all", "the reflected operators are Python functions here, callable on a Python "
                  "number as self (torch's are methods of its C tensor type)")
       for n in ("__radd__", "__rmul__", "__rand__", "__ror__", "__rxor__", "__rpow__")},
}


def _key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


CASES = [op for op in OP_DB if not op.name.startswith(ABSENT_PREFIXES)
         and KNOWN.get(_key(op), ("",))[0] != "all"]


@pytest.mark.parametrize("op", CASES, ids=_key)
def test_op_matches_torch_on_its_samples(op):
    fn = h.retorch_callable(op)
    assert fn is not None, f"retorch has no {op.name}"
    left_out = KNOWN.get(_key(op), ("", ""))[0]
    problems = []
    supported = op.supported_dtypes("cpu")
    for dtype in h.CHECKED:
        if dtype in supported and str(dtype).split(".")[-1] not in left_out:
            problems += h.check_values(op, fn, dtype)
    if _key(op) not in KNOWN_VARIANTS:
        for dtype in (h.torch.float32, h.torch.int64, h.torch.bool):
            if dtype in supported and str(dtype).split(".")[-1] not in left_out:
                problems += h.check_variants(op, dtype)
    # (torch.nn.functional's Python functions take no out=, whatever their kernels do)
    if op.supports_out and not op.name.startswith("nn.functional."):
        problems += h.check_out(op, fn, next((d for d in h.CHECKED if d in supported), None))
    if left_out != "grad" and op.supports_autograd and \
            h.torch.float64 in op.supported_backward_dtypes("cpu"):
        skipped = KNOWN_GRADS.get(_key(op), ((), ""))[0]
        problems += [(n, p) for n, p in h.check_grads(op, fn, limit=None) if n not in skipped]
    skipped = KNOWN_ERRORS.get(_key(op), ((), ""))[0]
    if skipped != "all":
        problems += [(n, p) for n, p in h.check_errors(op, fn) if n not in skipped]
    assert not problems, f"{_key(op)}: {len(problems)} samples differ from torch:\n" + \
        "\n".join(f"  sample {n}: {p}" for n, p in problems[:12])


# Reference inputs: torch's larger sample sets (extremal values, large sizes, every broadcast
# pattern) for the ops that have them, in one dtype each (float64, else int64, else bool; every
# integer dtype for REF_DTYPES' ops). name -> why the op is left out.
SCALARS_ONLY = ("torch 1.13 gives two Python floats a float64 result (torch.add(1.5, 2.5)) but a "
                "float and an int float32, an inconsistency its maintainers call a bug "
                "(pytorch/pytorch#76801); retorch gives float32 for both")
KNOWN_REF = {
    **{n: SCALARS_ONLY for n in ("add", "sub", "mul", "div.no_rounding_mode", "div.trunc_rounding",
                                 "div.floor_rounding", "true_divide", "floor_divide")},
    **{n: "shifts by the bit width or more, or by negative amounts: torch 1.13 shifts in C++, "
          "where they are undefined (x86 masks the count); retorch's are defined"
       for n in ("bitwise_left_shift", "bitwise_right_shift")},
    "__rmod__": "called with a Python number as self, which retorch's Python method refuses",
    "where": "complex scalars",
}
INT_DTYPES = (h.torch.int64, h.torch.int32, h.torch.int16, h.torch.int8, h.torch.uint8)
REF_DTYPES = {"gcd": INT_DTYPES, "lcm": INT_DTYPES}
REF_CASES = [op for op in CASES if op.reference_inputs_func is not None and
             _key(op) not in KNOWN_REF]


@pytest.mark.parametrize("op", REF_CASES, ids=_key)
def test_op_matches_torch_on_its_reference_inputs(op):
    fn = h.retorch_callable(op)
    supported = op.supported_dtypes("cpu")
    dtypes = REF_DTYPES.get(_key(op)) or [next((d for d in (h.torch.float64, h.torch.int64,
                                                            h.torch.bool) if d in supported),
                                               None)]
    left_out = KNOWN.get(_key(op), ("", ""))[0]
    problems = []
    for dtype in dtypes:
        if dtype in supported and str(dtype).split(".")[-1] not in left_out:
            problems += h.check_values(op, fn, dtype, reference=True)
    assert not problems, f"{_key(op)}: {len(problems)} reference inputs differ from torch:\n" + \
        "\n".join(f"  sample {n}: {p}" for n, p in problems[:12])
