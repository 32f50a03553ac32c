"""Copies of transposed views into contiguous tensors (Note [Transposing copies]): tiled for every
element size, batched, with strided leading dims and edges that are not tile multiples, equal to
torch's."""
import numpy as np
import pytest

from custom_helpers import P, both


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "uint8",
                                   "int16", "int32", "int64", "bool"])
def test_transposed_copies_match_torch(rng, dtype):
    # (45, 512) and (2, 9, 2048): column strides of 2 KB multiples, copied through the buffer.
    # (2..4, n): matrices of 2 to 4 columns, interleaved; (5..7, n) take the element iterator.
    for shape in [(8, 8), (33, 70), (100, 9), (3, 45, 64), (2, 3, 40, 17), (45, 512), (2, 9, 2048),
                  (2, 70), (3, 3, 33), (4, 8), (2, 5, 2, 40), (5, 40), (7, 9)]:
        x = P(rng, shape, dtype)
        both(lambda L, x: x.transpose(-2, -1).contiguous(), x, what=f"{shape}")
        both(lambda L, x: x.transpose(-2, -1).clone(), x, what=f"clone {shape}")
        both(lambda L, x: L.zeros(x.transpose(-2, -1).shape, dtype=x.dtype).copy_(
            x.transpose(-2, -1)), x, what=f"copy_ {shape}")
    # Strided leading dims and a column-strided source (every other column of a wider matrix).
    x = P(rng, (4, 5, 24, 36), dtype)
    both(lambda L, x: x[::2, 1:].transpose(-2, -1).contiguous(), x)
    both(lambda L, x: x.permute(1, 0, 3, 2).contiguous(), x)
    both(lambda L, x: x[..., ::2].transpose(-2, -1).contiguous(), x)
    both(lambda L, x: x.transpose(-2, -1)[:, :, 3:30].contiguous(), x)
    both(lambda L, x: x[:, :2].permute(0, 2, 3, 1).contiguous(), x)  # pixel_shuffle's pattern
    # Reductions over a leading dim go through the transposed copy.
    if dtype in ("float32", "float64"):
        both(lambda L, x: x.amax(0), P(rng, (70, 90), dtype))
        both(lambda L, x: x.prod(0), P(rng, (40, 90), dtype, domain="unit"), rtol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int32"])
def test_copies_into_transposed_destinations_and_converting_ones_match_torch(rng, dtype):
    """Copies into a transposed destination (the swapped views' tiled copy), converting copies
    of transposed tensors (tiles, then a contiguous conversion) and .to() of a transposed tensor
    (its layout kept, as torch's preserve_format): values and strides as torch's."""
    other = "float64" if dtype != "float64" else "float32"
    for shape in [(33, 70), (64, 2048), (3, 45, 64), (9, 4)]:
        x = P(rng, shape, dtype)
        both(lambda L, x: L.zeros(x.shape[:-2] + (x.shape[-1], x.shape[-2]),
                                  dtype=x.dtype).transpose(-2, -1).copy_(x), x, view=True,
             what=f"into transposed {shape}")
        both(lambda L, x: L.zeros(x.shape[:-2] + (x.shape[-1], x.shape[-2]),
                                  dtype=getattr(L, other)).transpose(-2, -1).copy_(x), x,
             view=True, what=f"into transposed {other} {shape}")
        both(lambda L, x: L.zeros(x.transpose(-2, -1).shape, dtype=getattr(L, other)).copy_(
            x.transpose(-2, -1)), x, what=f"converting {shape}")
        both(lambda L, x: x.transpose(-2, -1).to(getattr(L, other)), x, view=True,
             what=f".to {shape}")


def test_to_keeps_a_dense_layout_and_returns_self_when_nothing_changes():
    import retorch
    x = retorch.randn(4, 6, 5).permute(2, 0, 1)
    assert x.to(retorch.float32) is x and x.to("cpu") is x
    y = x.to(retorch.float64)
    assert y.stride() == x.stride() and y.dtype == retorch.float64
    assert y.tolist() == x.double().contiguous().tolist()
    z = x.to(retorch.float64, copy=True)
    assert z.stride() == x.stride()
    assert x.to(retorch.float32, copy=True).data_ptr() != x.data_ptr()


def test_dtype_conversion_methods_take_a_memory_format_as_torchs():
    import retorch
    import torch
    for lib in (retorch, torch):
        x = lib.randn(2, 3, 4, 5)
        for name in ("float", "double", "bfloat16", "half"):
            y = getattr(x, name)(memory_format=lib.channels_last)
            assert y.stride() == (60, 1, 15, 3), (lib.__name__, name, y.stride())
            assert getattr(x, name)().stride() == (60, 20, 5, 1)
        assert x.float() is x
