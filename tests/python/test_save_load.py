"""retorch.save / retorch.load: round trips, checkpoints, file objects, interop, bad files."""
import collections
import io
import json
import math
import os
import pickle
import struct

import numpy as np
import pytest
import torch

import retorch
import retorch.io

DTYPES = [retorch.float32, retorch.float64, retorch.float16, retorch.bfloat16, retorch.int64,
          retorch.int32, retorch.int16, retorch.int8, retorch.uint8, retorch.bool]


def sample(dtype, shape, rng):
    x = retorch.from_numpy(np.asarray(rng.standard_normal(shape) * 50))
    return (x > 0) if dtype == retorch.bool else x.to(dtype)


def as_f64(t):
    return t.to(retorch.float64).numpy() if t.dtype != retorch.bool else t.numpy()


def assert_same(a, b):
    assert isinstance(b, retorch.Tensor)
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(as_f64(a), as_f64(b))


def roundtrip(obj, tmp_path, **load_kw):
    path = tmp_path / "ckpt.rt"
    retorch.save(obj, path)
    from_path = retorch.load(path, **load_kw)
    buf = io.BytesIO()
    retorch.save(obj, buf)
    assert buf.getvalue() == path.read_bytes()
    buf.seek(0)
    from_buf = retorch.load(buf, **load_kw)
    return from_path, from_buf


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_roundtrip_every_dtype(dtype, tmp_path, rng):
    for shape in [(3, 4), (), (0,), (2, 0, 3), (1,)]:
        t = sample(dtype, shape, rng)
        for got in roundtrip(t, tmp_path):
            assert_same(t, got)


def test_non_contiguous_and_views_saved_as_copies(tmp_path, rng):
    base = sample(retorch.float32, (4, 6), rng)
    views = [base.t(), base[:, 1::2], base[2], base[1:3, 2:5]]
    for got in roundtrip(views, tmp_path):
        for v, g in zip(views, got):
            assert_same(v, g)
            assert g.is_contiguous()
        got[0][0, 0] = 1234.0  # copies: the views no longer share storage
        assert got[2].tolist() == views[2].tolist()


def test_nested_checkpoint(tmp_path, rng):
    w = sample(retorch.float32, (3, 2), rng)
    b = sample(retorch.float32, (3,), rng)
    sd = collections.OrderedDict([("layer.weight", w), ("layer.bias", b)])
    avg = sample(retorch.float32, (3, 2), rng)
    osd = {"state": {0: {"step": retorch.tensor(3.0), "exp_avg": avg},
                     1: {"momentum_buffer": None}},
           "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8, "amsgrad": False,
                             "params": [0, 1], "name": "main"}]}
    ckpt = {"epoch": 3, "model": sd, "opt": osd, "best": float("inf"), "nan": float("nan"),
            "tag": None, "big": 2 ** 70, "empty": [], "t": (), "shared": [w, w]}
    for got in roundtrip(ckpt, tmp_path):
        assert list(got) == list(ckpt)
        assert got["epoch"] == 3 and type(got["epoch"]) is int
        assert type(got["model"]) is collections.OrderedDict and list(got["model"]) == list(sd)
        for k in sd:
            assert_same(sd[k], got["model"][k])
        st = got["opt"]["state"]
        assert list(st) == [0, 1] and st[1] == {"momentum_buffer": None}
        assert_same(osd["state"][0]["exp_avg"], st[0]["exp_avg"])
        pg = got["opt"]["param_groups"][0]
        assert pg["betas"] == (0.9, 0.999) and type(pg["betas"]) is tuple
        assert pg["amsgrad"] is False and pg["params"] == [0, 1] and pg["eps"] == 1e-8
        assert got["best"] == math.inf and math.isnan(got["nan"]) and got["tag"] is None
        assert got["big"] == 2 ** 70 and got["empty"] == [] and got["t"] == ()
        assert got["shared"][0] is got["shared"][1]


def test_optimizer_state_dict_roundtrip(tmp_path):
    p = retorch.ones(3, requires_grad=True)
    opt = retorch.optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    path = tmp_path / "opt.rt"
    retorch.save({"opt": opt.state_dict(), "p": p}, path)
    got = retorch.load(path)
    assert got["p"].requires_grad and got["p"].tolist() == p.tolist()
    opt2 = retorch.optim.Adam([retorch.ones(3, requires_grad=True)], lr=0.1)
    assert type(got["opt"]) is dict and list(got["opt"]) == list(opt.state_dict())
    opt2.load_state_dict(got["opt"])
    assert opt2.state_dict()["param_groups.0.lr"].item() == 0.1


def test_flat_dict_is_plain_safetensors(tmp_path, rng):
    sd = {"a": sample(retorch.float32, (2, 3), rng), "b.c": sample(retorch.int64, (4,), rng),
          "h": sample(retorch.bfloat16, (5,), rng)}
    path = tmp_path / "model.safetensors"
    retorch.save(sd, path)
    # Independent parse of the spec: u64 header length, JSON header, raw little-endian bytes.
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    assert set(header) == {"__metadata__", "a", "b.c", "h"}
    assert header["a"]["dtype"] == "F32" and header["a"]["shape"] == [2, 3]
    begin, end = header["a"]["data_offsets"]
    raw = np.frombuffer(blob[8 + n + begin:8 + n + end], dtype="<f4").reshape(2, 3)
    np.testing.assert_array_equal(raw, sd["a"].numpy())
    assert all(isinstance(v, str) for v in header["__metadata__"].values())
    # retorch.io (safetensors.torch's interface) reads it as is.
    for k, v in retorch.io.load_file(path).items():
        assert_same(sd[k], v)
    # retorch.load of a plain safetensors file written by someone else.
    retorch.io.save_file({"x": sd["a"]}, tmp_path / "other.safetensors")
    got = retorch.load(tmp_path / "other.safetensors")
    assert list(got) == ["x"] and type(got) is dict
    assert_same(sd["a"], got["x"])
    got = retorch.load(path)
    assert list(got) == list(sd)


def test_map_location(tmp_path):
    t = retorch.arange(4)
    for loc in (None, "cpu", retorch.device("cpu"), {"cpu": "cpu"}):
        path = tmp_path / "t.rt"
        retorch.save({"t": t, "n": 1}, path)
        assert retorch.load(path, map_location=loc)["t"].tolist() == [0, 1, 2, 3]
    seen = []
    got = retorch.load(path, map_location=lambda s, where: seen.append(where) or s)
    assert seen == ["cpu"] and got["n"] == 1
    with pytest.raises(TypeError):
        retorch.load(path, map_location=3)


def test_save_rejects_unsupported_objects(tmp_path):
    for bad in [{"a": object()}, {(1, 2): 3}, {1.5: 2}, {True: 1}, {"s": {1, 2}}]:
        with pytest.raises(TypeError):
            retorch.save(bad, tmp_path / "bad.rt")
    assert not (tmp_path / "bad.rt").exists()


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    path = tmp_path / "ckpt.rt"
    retorch.save({"a": retorch.ones(2)}, path)
    with pytest.raises(TypeError):
        retorch.save({"a": retorch.zeros(2), "b": object()}, path)
    assert retorch.load(path)["a"].tolist() == [1.0, 1.0]
    assert os.listdir(tmp_path) == ["ckpt.rt"]


def good_file(tmp_path):
    path = tmp_path / "good.rt"
    retorch.save({"epoch": 1, "w": retorch.arange(10, dtype=retorch.float32)}, path)
    return path.read_bytes()


def test_truncated_and_corrupted_files_raise(tmp_path):
    blob = good_file(tmp_path)
    bad = tmp_path / "bad.rt"
    variants = [blob[:n] for n in (0, 3, 8, 20, len(blob) - 1)]
    variants += [b"\xff" * 8 + blob[8:], blob[:8] + b"[" + blob[9:], blob + b"extra"]
    (n,) = struct.unpack("<Q", blob[:8])
    header = blob[8:8 + n].decode()
    q = '\\"'  # the structure is JSON inside a JSON string: its quotes are escaped
    for old, new in [(f'{q}tensor{q}:0', f'{q}tensor{q}:7'), (f'{q}epoch{q}', f'{q}epoch{q}]'),
                     (f'{q}dict{q}', f'{q}dikt{q}'), (f'{q}tensor{q}:0', f'{q}tensor{q}:{q}0{q}'),
                     (f'{q}tensor{q}:0', f'{q}tensor{q}:-1'), ('"F32"', '"F99"'), ("[10]", "[11]"),
                     ('"retorch.version":"1"', '"retorch.version":"9"')]:
        assert old in header, old
        edited = header.replace(old, new, 1).encode()
        variants.append(struct.pack("<Q", len(edited)) + edited + blob[8 + n:])
    for v in variants:
        bad.write_bytes(v)
        with pytest.raises(RuntimeError):
            retorch.load(bad)
        with pytest.raises(RuntimeError):
            retorch.load(io.BytesIO(v))


class Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/retorch_pwned_by_pickle",))


def test_pickles_are_rejected_never_executed(tmp_path):
    marker = "/tmp/retorch_pwned_by_pickle"
    if os.path.exists(marker):
        os.remove(marker)
    raw = pickle.dumps({"x": Boom()})
    (tmp_path / "evil.pkl").write_bytes(raw)
    with pytest.raises(RuntimeError, match="pickle"):
        retorch.load(tmp_path / "evil.pkl")
    with pytest.raises(RuntimeError, match="pickle"):
        retorch.load(io.BytesIO(raw), weights_only=False)
    torch.save({"w": torch.ones(2)}, tmp_path / "torch.pt")
    with pytest.raises(RuntimeError, match="zip"):
        retorch.load(tmp_path / "torch.pt")
    assert not os.path.exists(marker)


def test_text_mode_file_object_is_rejected(tmp_path):
    good_file(tmp_path)
    with open(tmp_path / "good.rt", "r", encoding="latin-1") as f:
        with pytest.raises(TypeError):
            retorch.load(f)
