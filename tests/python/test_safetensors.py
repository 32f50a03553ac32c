"""retorch.io safetensors files, checked against an independent struct+json+numpy reading of the spec."""
import json
import struct

import numpy as np
import pytest
import torch

import retorch
import retorch.io

# safetensors dtype name -> (torch dtype, retorch dtype, numpy dtype of the raw bytes)
DTYPES = {
    "F64": (torch.float64, retorch.float64, np.float64),
    "F32": (torch.float32, retorch.float32, np.float32),
    "F16": (torch.float16, retorch.float16, np.float16),
    "BF16": (torch.bfloat16, retorch.bfloat16, np.int16),
    "I64": (torch.int64, retorch.int64, np.int64),
    "I32": (torch.int32, retorch.int32, np.int32),
    "I16": (torch.int16, retorch.int16, np.int16),
    "I8": (torch.int8, retorch.int8, np.int8),
    "U8": (torch.uint8, retorch.uint8, np.uint8),
    "BOOL": (torch.bool, retorch.bool, np.bool_),
}


def torch_sample(name, shape, gen):
    tdtype = DTYPES[name][0]
    if tdtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(tdtype)
    if tdtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    lo, hi = (0, 256) if tdtype == torch.uint8 else (-100, 100)
    return torch.randint(lo, hi, shape, generator=gen).to(tdtype)


def raw_bytes(t):
    """The little-endian bytes of a torch tensor in row-major order."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def to_retorch(t):
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: go through float32 (exact)
        return retorch.from_numpy(t.float().numpy().copy()).to(retorch.bfloat16)
    return retorch.from_numpy(t.numpy().copy())


def to_torch(r):
    if r.dtype == retorch.bfloat16:
        return torch.from_numpy(r.to(retorch.float32).numpy().copy()).to(torch.bfloat16)
    return torch.from_numpy(r.numpy().copy())


def parse_file(path):
    """Reads a safetensors file per the spec, independently of retorch."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    assert (8 + n) % 8 == 0, "data buffer should start 8-byte aligned"
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    buf = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    out = {}
    ranges = []
    for name, info in header.items():
        begin, end = info["data_offsets"]
        ranges.append((begin, end))
        np_dtype = DTYPES[info["dtype"]][2]
        arr = np.frombuffer(buf[begin:end], dtype=np_dtype).reshape(info["shape"])
        tdtype = DTYPES[info["dtype"]][0]
        t = torch.from_numpy(arr.copy())
        out[name] = t.view(torch.bfloat16) if tdtype == torch.bfloat16 else t
    ranges.sort()
    pos = 0
    for begin, end in ranges:
        assert begin == pos
        pos = end
    assert pos == len(buf)
    return out, metadata


def write_file(path, tensors, metadata=None, pad=True):
    """Writes a safetensors file by hand from torch tensors."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        b = raw_bytes(t)
        dname = next(k for k, v in DTYPES.items() if v[0] == t.dtype)
        header[name] = {"dtype": dname, "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    write_raw(path, json.dumps(header), data, pad)


def write_raw(path, header_text, data, pad=True, length=None):
    h = header_text.encode("utf-8")
    if pad:
        h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h) if length is None else length) + h + data)


def assert_same(a, b):
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    assert torch.equal(a, b)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def test_retorch_writes_spec_files(tmp_path, gen):
    originals = {f"t_{name}": torch_sample(name, (3, 5), gen) for name in DTYPES}
    originals["scalar"] = torch.tensor(1.25)
    originals["empty"] = torch.zeros(0, 4)
    originals["long_vector"] = torch_sample("F32", (1001,), gen)
    path = tmp_path / "model.safetensors"
    strided = torch_sample("F32", (4, 6), gen)
    rt = {k: to_retorch(v) for k, v in originals.items()}
    rt["strided"] = to_retorch(strided).t()  # non-contiguous: written contiguous
    originals["strided"] = strided.t()
    retorch.io.save_file(rt, path, metadata={"format": "pt", "step": "10"})
    parsed, metadata = parse_file(path)
    assert metadata == {"format": "pt", "step": "10"}
    assert list(parsed) == list(originals)
    for name, t in originals.items():
        assert_same(parsed[name], t.contiguous())


def test_retorch_reads_hand_written_files(tmp_path, gen):
    tensors = {name.lower(): torch_sample(name, (2, 3, 4), gen) for name in DTYPES}
    tensors["zero_dim"] = torch.tensor(7, dtype=torch.int32)
    tensors["empty"] = torch.zeros(2, 0, dtype=torch.float16)
    path = tmp_path / "hand.safetensors"
    write_file(path, tensors, metadata={"a": "b"})
    loaded = retorch.io.load_file(path)
    assert list(loaded) == list(tensors)
    for name, t in tensors.items():
        assert loaded[name].dtype == DTYPES[next(k for k, v in DTYPES.items() if v[0] == t.dtype)][1]
        assert_same(to_torch(loaded[name]), t)
    assert retorch.io.load_metadata(path) == {"a": "b"}
    # The loaded tensors are usable after the dict is gone, and writable without touching the file.
    f32 = loaded.pop("f32")
    del loaded
    f32.add_(1)
    assert_same(to_torch(retorch.io.load_file(path)["f32"]), tensors["f32"])


def test_unpadded_and_unaligned_files(tmp_path, gen):
    # No padding after the JSON: data starts at an arbitrary offset, so tensors are copied.
    tensors = {"b": torch_sample("U8", (3,), gen), "a": torch_sample("F64", (5,), gen)}
    path = tmp_path / "odd.safetensors"
    write_file(path, tensors, pad=False)
    loaded = retorch.io.load_file(path)
    for name, t in tensors.items():
        assert_same(to_torch(loaded[name]), t)


def test_round_trip_preserves_order_and_values(tmp_path):
    d = {"z": retorch.randn(3, 3), "a": retorch.arange(5), "m": retorch.ones(2, dtype=retorch.bool)}
    path = tmp_path / "rt.safetensors"
    retorch.io.save(d, path)
    back = retorch.io.load(path)
    assert list(back) == ["z", "a", "m"]
    for k in d:
        assert to_torch(back[k]).equal(to_torch(d[k]))


F32_OK = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'


@pytest.mark.parametrize("header,data,length,match", [
    (F32_OK, b"\0" * 4, None, "outside the 4-byte data buffer"),           # truncated data
    (F32_OK, b"\0" * 8, 10_000, "header length 10000 goes past the end"),  # header beyond file
    ('{"a": {"dtype": ', b"", None, "invalid JSON header"),
    ('{"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}', b"\0" * 8, None,
     "tensor 'a': unsupported dtype 'C64'"),
    ('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,80]}}', b"\0" * 8, None,
     "tensor 'a': data_offsets \\[0, 80\\] hold 80 bytes but shape \\[2\\] of F32 needs 8"),
    ('{"a":{"dtype":"F32","shape":[20],"data_offsets":[0,80]}}', b"\0" * 8, None,
     "tensor 'a' data_offsets \\[0, 80\\] lie outside"),
    ('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
     '"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', b"\0" * 12, None,
     "tensor 'b' data_offsets \\[4, 12\\] overlap tensor 'a'"),
    ('{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', b"\0" * 12, None,
     "hole before tensor 'a'"),
    (F32_OK, b"\0" * 12, None, "cover only 8"),
    ('{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}}', b"\0" * 8, None,
     "must hold non-negative integers"),
    ('{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}', b"\0" * 8, None,
     "data_offsets must be two non-negative integers"),
])
def test_corrupt_files_raise_clear_errors(tmp_path, header, data, length, match):
    path = tmp_path / "bad.safetensors"
    write_raw(path, header, data, length=length)
    with pytest.raises(RuntimeError, match=match) as info:
        retorch.io.load_file(path)
    assert str(path) in str(info.value)


def test_short_and_missing_files(tmp_path):
    path = tmp_path / "short.safetensors"
    path.write_bytes(b"\x01\x02")
    with pytest.raises(RuntimeError, match="too short"):
        retorch.io.load_file(path)
    with pytest.raises(RuntimeError, match="No such file"):
        retorch.io.load_file(tmp_path / "missing.safetensors")


def test_save_errors(tmp_path):
    with pytest.raises(TypeError, match="not a retorch.Tensor"):
        retorch.io.save_file({"a": torch.zeros(1)}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="metadata must map str to str"):
        retorch.io.save_file({"a": retorch.zeros(1)}, tmp_path / "x.safetensors", {"k": 1})
    # A failed save leaves an existing file as it was.
    path = tmp_path / "keep.safetensors"
    retorch.io.save_file({"a": retorch.zeros(2)}, path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="reserved"):
        retorch.io.save_file({"__metadata__": retorch.zeros(1)}, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.safetensors"]
