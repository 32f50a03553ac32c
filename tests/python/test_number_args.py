"""Python numbers for Tensor arguments, as torch's bindings take them (Note [Python numbers for
Tensor arguments] in tools/codegen/gen_python.py): ops.yaml's python_numbers against torch's
own schemas, and calls with numbers against torch's results and TypeErrors."""
import os
import sys

import pytest
import torch

import retorch

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "codegen"))
import model  # noqa: E402

# torch's python_arg_parser lets these take numbers for every Tensor argument.
NUMBERS_AS_TENSORS = {"add", "div", "divide", "mul", "multiply", "sub", "subtract", "true_divide",
                      "to", "_to_copy", "copy_", "floor_divide"}
NUMBER_TYPES = ("number", "Optional[number]")


def torch_alternatives(entry):
    """The sets of entry's Tensor arguments torch takes numbers for in one call: for each of
    torch's overloads of the name whose Scalar arguments are Scalars there too, the entry's
    Tensor arguments that overload declares Scalar (the largest sets only)."""
    tensors = [a.name for a in entry.args if a.is_tensor]
    if not tensors:
        return []
    if entry.name in NUMBERS_AS_TENSORS:
        return [sorted(tensors)]
    scalars = [a.name for a in entry.args if a.type in ("Scalar", "Scalar?")]
    try:
        schemas = torch._C._jit_get_schemas_for_operator("aten::" + entry.name)
    except RuntimeError:
        return []
    alts = []
    for s in schemas:
        if s.overload_name.endswith("out"):
            continue
        types = {a.name: str(a.type) for a in s.arguments}
        if any(p in types and types[p] not in NUMBER_TYPES for p in scalars):
            continue
        taken = sorted(a for a in tensors if types.get(a) in NUMBER_TYPES)
        if taken and taken not in alts:
            alts.append(taken)
    return sorted(a for a in alts if not any(set(a) < set(b) for b in alts))


ENTRIES = [e for e in model.load(os.path.join(ROOT, "retorch", "ops", "ops.yaml")) if e.python]


def test_python_numbers_are_torchs():
    wrong = []
    for e in ENTRIES:
        want = torch_alternatives(e)
        got = sorted(sorted(alt) for alt in e.python_numbers)
        if got != want:
            wrong.append(f"{e.raw['func'].split('(')[0]}: ops.yaml {got}, torch {want}")
    assert not wrong, "python_numbers differ from torch's schemas:\n" + "\n".join(wrong)


def _x(lib):
    return lib.tensor([1.5, -2.0, 3.0])


def _i(lib):
    return lib.tensor([3, 5, 6])


CALLS = {
    "atan2_number": lambda t: t.atan2(_x(t), 2),
    "atan2_method_number": lambda t: _x(t).atan2(2.0),
    "maximum_number": lambda t: t.maximum(_x(t), 1),
    "hypot_number": lambda t: t.hypot(2.0, _x(t)),
    "pow_two_numbers": lambda t: t.pow(2, 3),
    "pow_number_base": lambda t: t.pow(2, _x(t)),
    "pow_number_exponent": lambda t: t.pow(_x(t), 2),
    "eq_number_first": lambda t: t.eq(3, _x(t)),
    "eq_number_other": lambda t: t.eq(_x(t), 3.0),
    "eq_method": lambda t: _x(t).eq(-2),
    "where_numbers": lambda t: t.where(_x(t) > 0, 1.0, 2.0),
    "where_number_other": lambda t: t.where(_x(t) > 0, _x(t), 0.5),
    "bitwise_and_number_first": lambda t: t.bitwise_and(6, _i(t)),
    "bitwise_and_two_numbers": lambda t: t.bitwise_and(6, 3),
    "remainder_number_first": lambda t: t.remainder(7, _i(t)),
    "remainder_two_numbers": lambda t: t.remainder(7, 3),
    "xlogy_number_first": lambda t: t.xlogy(2.0, _x(t).abs()),
    "add_two_numbers": lambda t: t.add(2, 3),
    "mul_number_first": lambda t: t.mul(2.5, _x(t)),
    "clamp_min_number": lambda t: t.clamp_min(_x(t), 0.0),
    "lerp_number_weight": lambda t: t.lerp(_x(t), _x(t) * 2, 0.25),
    "masked_fill_number": lambda t: _x(t).masked_fill(_x(t) > 0, 7.0),
    "matmul_number": lambda t: t.matmul(_x(t), 2.0),
    "cat_numbers": lambda t: t.cat([_x(t), 2.0]),
    "index_select_number_index": lambda t: t.index_select(_x(t), 0, 1),
    "out_number": lambda t: t.atan2(_x(t), _x(t), out=3),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_numbers_for_tensors_as_torch(name):
    call = CALLS[name]
    try:
        want = call(torch)
    except TypeError:
        with pytest.raises(TypeError):
            call(retorch)
        return
    got = call(retorch)
    assert isinstance(got, retorch.Tensor)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    torch.testing.assert_close(torch.tensor(got.tolist(), dtype=want.dtype), want)
