"""retorch.gguf against gguf-py: files written by gguf.GGUFWriter read back (metadata of every
value type, tensors of every stored kind), and malformed files rejected with a clear error."""
import struct

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT
from gguf import GGUFReader, GGUFValueType, GGUFWriter, quants

import retorch
import retorch.gguf

METADATA = [  # (key, value, GGUF type, array element type)
    ("t.u8", 200, GGUFValueType.UINT8, None),
    ("t.i8", -100, GGUFValueType.INT8, None),
    ("t.u16", 65000, GGUFValueType.UINT16, None),
    ("t.i16", -32000, GGUFValueType.INT16, None),
    ("t.u32", 4_000_000_000, GGUFValueType.UINT32, None),
    ("t.i32", -2_000_000_000, GGUFValueType.INT32, None),
    ("t.f32", 0.1, GGUFValueType.FLOAT32, None),
    ("t.u64", 2**64 - 5, GGUFValueType.UINT64, None),
    ("t.i64", -(2**62), GGUFValueType.INT64, None),
    ("t.f64", 0.1, GGUFValueType.FLOAT64, None),
    ("t.true", True, GGUFValueType.BOOL, None),
    ("t.false", False, GGUFValueType.BOOL, None),
    ("t.str", "héllo ☃", GGUFValueType.STRING, None),
    ("t.empty_str", "", GGUFValueType.STRING, None),
    ("t.strs", ["a", "", "ü", "<s>"], GGUFValueType.ARRAY, GGUFValueType.STRING),
    ("t.i32s", [1, -2, 3], GGUFValueType.ARRAY, GGUFValueType.INT32),
    ("t.u64s", [0, 2**64 - 1], GGUFValueType.ARRAY, GGUFValueType.UINT64),
    ("t.f32s", [0.5, -1.25, 3.0e-8], GGUFValueType.ARRAY, GGUFValueType.FLOAT32),
    ("t.f64s", [0.1, 1e300], GGUFValueType.ARRAY, GGUFValueType.FLOAT64),
    ("t.bools", [True, False, True], GGUFValueType.ARRAY, GGUFValueType.BOOL),
    ("t.u8s", [0, 255, 7], GGUFValueType.ARRAY, GGUFValueType.UINT8),
    ("t.nested", [[1, 2], [3]], GGUFValueType.ARRAY, GGUFValueType.ARRAY),
]


def expected(value, vtype, sub):
    """The Python value a reader should give back (float32 values rounded to float32)."""
    if vtype == GGUFValueType.FLOAT32:
        return float(np.float32(value))
    if vtype == GGUFValueType.ARRAY and sub == GGUFValueType.FLOAT32:
        return [float(np.float32(v)) for v in value]
    return value


def tensors(rng):
    """name -> (array passed to add_tensor, raw_dtype, logical shape, float32 values)."""
    out = {}
    a = rng.standard_normal((3, 5)).astype(np.float32)
    out["f32"] = (a, None, (3, 5), a)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    out["f32_3d"] = (a, None, (2, 3, 4), a)
    a = rng.standard_normal(7).astype(np.float32)
    out["f32_1d"] = (a, None, (7,), a)
    a = rng.standard_normal((4, 8)).astype(np.float16)
    out["f16"] = (a, None, (4, 8), a.astype(np.float32))
    a = rng.integers(-100, 100, (2, 6)).astype(np.int32)
    out["i32"] = (a, None, (2, 6), a)
    a = rng.standard_normal((3, 2)).astype(np.float64)
    out["f64"] = (a, None, (3, 2), a.astype(np.float32))
    f = rng.standard_normal((2, 16)).astype(np.float32)
    bf = quants.quantize(f, GT.BF16)  # uint8 [2, 32]
    out["bf16"] = (bf, GT.BF16, (2, 16), quants.dequantize(bf, GT.BF16))
    for qt, shape in ((GT.Q8_0, (4, 64)), (GT.Q4_0, (3, 2, 64))):
        q = quants.quantize(rng.standard_normal(shape).astype(np.float32), qt)
        out[qt.name.lower()] = (q, qt, shape, quants.dequantize(q, qt))
    for qt, nbytes, shape in ((GT.Q4_K, 144, (2, 256)), (GT.Q6_K, 210, (2, 512))):
        nb = shape[1] // 256
        q = rng.integers(0, 256, (shape[0], nb, nbytes), dtype=np.uint8)
        d = rng.uniform(0.01, 1, (shape[0], nb, 2)).astype(np.float16).view(np.uint8)
        if qt == GT.Q4_K:  # d and dmin first
            q[..., 0:4] = d
        else:  # d last
            q[..., 208:210] = d[..., :2]
        q = q.reshape(shape[0], -1)
        out[qt.name.lower()] = (q, qt, shape, quants.dequantize(q, qt))
    return out


def write(path, rng, alignment=None):
    w = GGUFWriter(str(path), arch="llama")
    if alignment:
        w.add_custom_alignment(alignment)
    for key, value, vtype, sub in METADATA:
        w.add_key_value(key, value, vtype, sub_type=sub)
    ts = tensors(rng)
    for name, (arr, raw, _, _) in ts.items():
        w.add_tensor(name, arr, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ts


def test_gguf_metadata(tmp_path, rng):
    path = tmp_path / "m.gguf"
    write(path, rng)
    r = retorch.gguf.load(path)
    assert r.version == 3 and r.alignment == 32
    want = {"general.architecture": "llama"}
    want.update({k: expected(v, t, s) for k, v, t, s in METADATA})
    assert r.metadata == want
    assert list(r.metadata) == list(want)  # file order
    assert isinstance(r.metadata["t.true"], bool) and isinstance(r.metadata["t.u8s"][0], int)
    # gguf-py's own reader agrees on every field.
    ref = GGUFReader(str(path))
    for key, field in ref.fields.items():
        if key.startswith("GGUF."):
            continue
        got = r.metadata[key]
        if field.types[0] == GGUFValueType.ARRAY and field.types[1] == GGUFValueType.ARRAY:
            continue  # gguf-py's reader does not decode nested arrays
        assert got == pytest.approx(field.contents()) if isinstance(got, float) else \
            got == field.contents(), key


def test_gguf_tensors(tmp_path, rng):
    path = tmp_path / "t.gguf"
    ts = write(path, rng)
    r = retorch.gguf.load(path)
    assert list(r.tensors) == list(ts)
    ref = {t.name: t for t in GGUFReader(str(path)).tensors}
    for name, (arr, raw, shape, values) in ts.items():
        t = r.tensors[name]
        assert t.shape == shape, name
        assert t.qtype == int(ref[name].tensor_type), name
        deq = t.dequantize().numpy()
        assert deq.shape == shape and np.array_equal(deq, values.reshape(shape)), name
        if raw == GT.BF16:  # plain elements: a bfloat16 tensor of the logical shape
            assert tuple(t.data.shape) == shape and t.data.dtype == retorch.bfloat16
            continue
        data = t.data.numpy()
        if raw in (GT.Q8_0, GT.Q4_0, GT.Q4_K, GT.Q6_K):
            # blocks: uint8 [rows, row_bytes], the bytes as written
            rows = int(np.prod(shape[:-1]))
            assert data.dtype == np.uint8 and data.shape == (rows, arr.nbytes // rows), name
            assert np.array_equal(data.reshape(-1), arr.reshape(-1)), name
        else:
            assert data.dtype == arr.dtype and data.shape == shape, name
            assert np.array_equal(data, arr), name
        assert np.array_equal(data.view(np.uint8).reshape(-1), ref[name].data.view(np.uint8)
                              .reshape(-1)), name


def test_gguf_custom_alignment(tmp_path, rng):
    path = tmp_path / "a.gguf"
    ts = write(path, rng, alignment=64)
    r = retorch.gguf.load(path)
    assert r.alignment == 64 and r.data_offset % 64 == 0
    assert np.array_equal(r.tensors["f32"].data.numpy(), ts["f32"][0])
    assert np.array_equal(r.tensors["q8_0"].data.numpy().reshape(-1), ts["q8_0"][0].reshape(-1))


def test_gguf_tensors_outlive_reader(tmp_path, rng):
    # The tensors hold the mapping: they stay valid after the reader (and the file) are gone.
    path = tmp_path / "o.gguf"
    ts = write(path, rng)
    t = retorch.gguf.load(path).tensors["f32"].data
    path.unlink()
    import gc
    gc.collect()
    assert np.array_equal(t.numpy(), ts["f32"][0])


# ---- malformed files, built field by field


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack("<I", vtype) + payload


def tinfo(name, dims, ggml_type, offset):
    return (s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
            + struct.pack("<I", ggml_type) + struct.pack("<Q", offset))


def gguf_bytes(kvs=(), infos=(), data=b"", version=3, magic=b"GGUF", n_tensors=None, n_kv=None,
               alignment=32):
    head = (magic + struct.pack("<I", version) +
            struct.pack("<QQ", len(infos) if n_tensors is None else n_tensors,
                        len(kvs) if n_kv is None else n_kv))
    body = head + b"".join(kvs) + b"".join(infos)
    body += b"\0" * ((-len(body)) % alignment)
    return body + data


def expect_error(tmp_path, content, match):
    p = tmp_path / "bad.gguf"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=match) as e:
        retorch.gguf.load(p)
    assert "bad.gguf" in str(e.value)  # every message names the file


GOOD_KVS = [kv("general.architecture", 8, s("llama")), kv("n", 4, struct.pack("<I", 7))]
F32_2x3 = tinfo("w", [3, 2], 0, 0)
DATA = np.arange(6, dtype=np.float32).tobytes() + b"\0" * 8


def test_gguf_handmade_file_reads(tmp_path):
    p = tmp_path / "ok.gguf"
    p.write_bytes(gguf_bytes(GOOD_KVS, [F32_2x3], DATA))
    r = retorch.gguf.load(p)
    assert r.metadata == {"general.architecture": "llama", "n": 7}
    assert r.tensors["w"].shape == (2, 3)
    assert np.array_equal(r.tensors["w"].data.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_gguf_malformed(tmp_path):
    e = lambda content, match: expect_error(tmp_path, content, match)  # noqa: E731
    e(b"", r"truncated: the magic number")
    e(b"GGU", r"truncated")
    e(gguf_bytes(GOOD_KVS, magic=b"GGML"), r"not a GGUF file \(magic 'GGML'")
    e(gguf_bytes(GOOD_KVS, version=1), r"unsupported GGUF version 1 \(version 1 is obsolete")
    e(gguf_bytes(GOOD_KVS, version=4), r"unsupported GGUF version 4")
    e(gguf_bytes(GOOD_KVS, version=3 << 24), r"big-endian")
    e(gguf_bytes(GOOD_KVS, n_tensors=2**60), r"tensor count 1152921504606846976 is impossible")
    e(gguf_bytes(GOOD_KVS, n_kv=2**62), r"metadata count \d+ is impossible")
    e(gguf_bytes([struct.pack("<Q", 2**63) + b"key"]), r"string length 9223372036854775808 of a "
      r"metadata key \(metadata entry 0\)")
    e(gguf_bytes([kv("k", 8, struct.pack("<Q", 1000) + b"abc")]),
      r"string length 1000 of a string value \(metadata 'k'\)")
    e(gguf_bytes([kv("arr", 9, struct.pack("<IQ", 4, 2**40))]),
      r"array length 1099511627776 of uint32 \(metadata 'arr'\)")
    e(gguf_bytes([kv("arr", 9, struct.pack("<IQ", 8, 2**58))]), r"array length \d+ of string")
    e(gguf_bytes([kv("k", 13, b"\0" * 8)]), r"unknown value type 13 for the value type "
      r"\(metadata 'k'\)")
    e(gguf_bytes([kv("arr", 9, struct.pack("<IQ", 77, 1))]), r"unknown value type 77")
    e(gguf_bytes([kv("k", 4, b"\1\0\0\0"), kv("k", 4, b"\2\0\0\0")]),
      r"duplicate metadata key 'k'")
    deep = struct.pack("<IQ", 9, 1) * 20 + struct.pack("<IQ", 4, 0)
    e(gguf_bytes([kv("deep", 9, deep)]), r"arrays nest deeper than 8")
    e(gguf_bytes([kv("general.alignment", 4, struct.pack("<I", 48))]),
      r"general.alignment 48 is not a power of two")
    e(gguf_bytes([kv("general.alignment", 10, struct.pack("<Q", 64))]),
      r"general.alignment must be a uint32, got uint64")
    e(gguf_bytes(GOOD_KVS, [tinfo("w", [3, 2], 0, 4096)], DATA),
      r"tensor 'w' data \[4096, 4120\) of the data section at \d+ runs past the end of the file")
    e(gguf_bytes(GOOD_KVS, [tinfo("w", [3, 2], 0, 8)], DATA),
      r"tensor 'w' offset 8 is not a multiple of the alignment 32")
    e(gguf_bytes(GOOD_KVS, [tinfo("w", [3, 2], 99, 0)], DATA), r"unknown ggml type id 99")
    e(gguf_bytes(GOOD_KVS, [tinfo("w", [2**40, 2**40], 0, 0)], DATA),
      r"tensor 'w' dims overflow \(dim 1")
    e(gguf_bytes(GOOD_KVS, [tinfo("w", [0, 2**62, 4], 0, 0)], DATA), r"dims overflow")
    e(gguf_bytes(GOOD_KVS, [tinfo("w", [2**62], 0, 0)], DATA), r"larger than the file")
    e(gguf_bytes(GOOD_KVS, [tinfo("w", [1, 1, 1, 1, 1], 0, 0)], DATA),
      r"tensor 'w' has 5 dims; GGUF allows at most 4")
    e(gguf_bytes(GOOD_KVS, [tinfo("q", [20, 2], 8, 0)], DATA),
      r"tensor 'q': row length 20 is not a multiple of the Q8_0 block size 32")
    e(gguf_bytes(GOOD_KVS, [F32_2x3, F32_2x3], DATA), r"duplicate tensor name 'w'")
    e(gguf_bytes(GOOD_KVS, [F32_2x3], DATA)[:-20], r"runs past the end of the file")


def test_gguf_every_truncation_fails_cleanly(tmp_path, rng):
    # Cut a real file at every byte: each prefix raises a ValueError naming the file, except
    # those that only lose the padding after the last tensor's data.
    path = tmp_path / "full.gguf"
    w = GGUFWriter(str(path), arch="llama")
    w.add_array("tokenizer.ggml.tokens", ["a", "bc", "def"])
    w.add_array("t.f", [1.0, 2.0])
    w.add_uint32("t.n", 3)
    w.add_tensor("x", rng.standard_normal((2, 3)).astype(np.float32))
    w.add_tensor("q", quants.quantize(rng.standard_normal((2, 32)).astype(np.float32), GT.Q8_0),
                 raw_dtype=GT.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    full = path.read_bytes()
    end = max(t.data_offset + t.n_bytes for t in GGUFReader(str(path)).tensors)
    cut = tmp_path / "cut.gguf"
    for n in range(len(full)):
        cut.write_bytes(full[:n])
        if n >= end:
            retorch.gguf.load(cut)
            continue
        with pytest.raises(ValueError, match=r"GGUF file '.*cut.gguf': .*(truncated|past the end|"
                                             r"impossible|larger than the file)"):
            retorch.gguf.load(cut)


def test_gguf_random_corruption_never_crashes(tmp_path, rng):
    # Flip bytes of the header, metadata and tensor infos: loading either works or raises a
    # ValueError; it never crashes, hangs or reads outside the file (the ASan build checks that).
    good = gguf_bytes(GOOD_KVS + [kv("arr", 9, struct.pack("<IQ", 8, 2) + s("ab") + s("c"))],
                      [F32_2x3, tinfo("q", [32, 1], 8, 32)], DATA + b"\0" * 8 + b"\1" * 34)
    header_end = len(good) - len(DATA) - 42
    p = tmp_path / "fuzz.gguf"
    for _ in range(400):
        b = bytearray(good)
        for i in rng.integers(0, header_end, rng.integers(1, 4)):
            b[i] = rng.integers(0, 256)
        p.write_bytes(bytes(b))
        try:
            r = retorch.gguf.load(p)
            for t in r.tensors.values():
                t.data.clone()  # touches every byte
        except ValueError as err:
            assert "fuzz.gguf" in str(err), (str(err), bytes(b))
