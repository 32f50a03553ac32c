"""retorch.utils.tensorboard.SummaryWriter, checked by reading its files with tensorboard's reader."""
import glob
import os
import struct

import numpy as np
import pytest

import retorch
from retorch.utils.tensorboard import SummaryWriter

try:  # the reader is a set-up dependency: missing means a broken set-up, so fail, don't skip
    import tensorboard  # noqa: F401
except ImportError:
    pytest.fail("tensorboard is missing: run scripts/setup.sh (installs it into .deps/python)",
                pytrace=False)
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.backend.event_processing import event_file_loader  # noqa: E402
from tensorboard.compat.proto import event_pb2  # noqa: E402
from tensorboard.compat.tensorflow_stub import errors as tb_errors  # noqa: E402
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow  # noqa: E402


def event_files(log_dir):
    return sorted(glob.glob(os.path.join(str(log_dir), "events.out.tfevents.*")))


def read_events(path):
    """Every Event in the file, parsed from the raw records (CRCs checked by the loader)."""
    loader = event_file_loader.RawEventFileLoader(path)
    return [event_pb2.Event.FromString(r) for r in loader.Load()]


def read_records_strict(path):
    """Raw records through tensorboard's record reader, raising DataLossError on a bad CRC."""
    reader = pywrap_tensorflow.PyRecordReader_New(path)
    out = []
    while True:
        try:
            reader.GetNext()
        except tb_errors.OutOfRangeError:
            return out
        out.append(reader.record())


def accumulate(path):
    acc = event_accumulator.EventAccumulator(
        str(path), size_guidance={event_accumulator.HISTOGRAMS: 0, event_accumulator.SCALARS: 0,
                                  event_accumulator.TENSORS: 0})
    acc.Reload()
    return acc


def test_file_name_and_version_event(tmp_path):
    w = SummaryWriter(str(tmp_path / "run"))
    w.close()
    (path,) = event_files(tmp_path / "run")
    name = os.path.basename(path).split(".")
    assert name[:3] == ["events", "out", "tfevents"]
    assert name[3].isdigit() and len(name[3]) == 10
    assert name[-2] == str(os.getpid())
    events = read_events(path)
    assert len(events) == 1
    assert events[0].file_version == "brain.Event:2"
    assert events[0].wall_time > 1e9


def test_add_scalar(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(5):
            w.add_scalar("loss/train", 1.0 / (step + 1), step)
        w.add_scalar("lr", retorch.tensor(0.125), 7, walltime=1234.5)
        w.add_scalar("acc", np.float32(0.75), global_step=3)
    acc = accumulate(tmp_path)
    assert set(acc.Tags()["scalars"]) == {"loss/train", "lr", "acc"}
    loss = acc.Scalars("loss/train")
    assert [e.step for e in loss] == list(range(5))
    assert [e.value for e in loss] == pytest.approx([1.0 / (s + 1) for s in range(5)], rel=1e-7)
    (lr,) = acc.Scalars("lr")
    assert (lr.step, lr.value, lr.wall_time) == (7, 0.125, 1234.5)
    assert acc.Scalars("acc")[0].value == 0.75


def test_add_scalars_writes_one_run_per_key(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(3):
            w.add_scalars("run/loss", {"train": 1.0 + step, "test": 2.0 + step}, step)
    subdirs = sorted(d for d in os.listdir(tmp_path) if os.path.isdir(tmp_path / d))
    assert subdirs == ["run_loss_test", "run_loss_train"]
    for key, base in (("train", 1.0), ("test", 2.0)):
        (path,) = event_files(tmp_path / f"run_loss_{key}")
        acc = accumulate(path)
        assert acc.Tags()["scalars"] == ["run/loss"]
        assert [(e.step, e.value) for e in acc.Scalars("run/loss")] == [
            (s, base + s) for s in range(3)]
    # The main run holds no scalars of its own.
    assert accumulate(event_files(tmp_path)[0]).Tags()["scalars"] == []


def histo_of(path, tag):
    for e in read_events(path):
        for v in e.summary.value:
            if v.tag == tag:
                return e.step, v.histo
    raise AssertionError(f"no histogram {tag}")


def test_add_histogram_default_bins(tmp_path, rng):
    values = rng.standard_normal(1000)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("weights", retorch.tensor(values, dtype=retorch.float32), 4)
    step, h = histo_of(event_files(tmp_path)[0], "weights")
    v32 = values.astype(np.float32).astype(np.float64)
    assert step == 4
    assert h.num == 1000
    assert h.min == v32.min() and h.max == v32.max()
    assert h.sum == pytest.approx(v32.sum(), rel=1e-9, abs=1e-9)
    assert h.sum_squares == pytest.approx(v32.dot(v32), rel=1e-9)
    assert sum(h.bucket) == 1000
    assert len(h.bucket) == len(h.bucket_limit)
    assert h.bucket[0] == 0 and h.bucket_limit[0] <= v32.min() <= h.bucket_limit[1]
    assert h.bucket_limit[-1] >= v32.max() and h.bucket[-1] > 0
    acc = accumulate(tmp_path)
    assert acc.Tags()["histograms"] == ["weights"]
    hv = acc.Histograms("weights")[0].histogram_value
    assert (hv.num, hv.min, hv.max) == (1000, h.min, h.max)


def test_add_histogram_int_and_explicit_bins(tmp_path):
    values = np.array([1.0, 2.0, 2.0, 3.0, 9.0])
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("n", values, 1, bins=4)
        w.add_histogram("edges", values.tolist(), 2, bins=[0, 1, 2, 3, 4, 5])
        w.add_histogram("const", retorch.ones(3), 3, bins=2)
    path = event_files(tmp_path)[0]
    # numpy.histogram(values, 4): edges 1, 3, 5, 7, 9; counts 3, 1, 0, 1 (first bucket non-empty,
    # so an empty bucket at the left edge leads, as torch writes it).
    _, h = histo_of(path, "n")
    assert list(h.bucket_limit) == [1, 3, 5, 7, 9]
    assert list(h.bucket) == [0, 3, 1, 0, 1]
    # Edges [0..5]: 9 lies outside and is not counted, but min/max/num/sum cover every value.
    _, h = histo_of(path, "edges")
    assert list(h.bucket_limit) == [1, 2, 3, 4]
    assert list(h.bucket) == [0, 1, 2, 1]
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (1, 9, 5, 17, 99)
    # All-equal values: numpy widens the range by 0.5 each way (edges 0.5, 1, 1.5; counts 0, 3).
    _, h = histo_of(path, "const")
    assert list(h.bucket_limit) == [1.0, 1.5]
    assert list(h.bucket) == [0, 3]


def reference_histogram(values, bins):
    """torch's make_histogram (torch 1.13's own copy fails on numpy 1.24): numpy.histogram, then
    trim to the non-empty range, keeping one empty bucket on the left for the left edge."""
    counts, limits = np.histogram(values, bins=bins)
    cum = np.cumsum(counts > 0)
    start, end = np.searchsorted(cum, [0, cum[-1] - 1], side="right")
    end = int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    return counts.tolist(), limits[start:end + 1].tolist()


@pytest.mark.parametrize("bins", ["tensorflow", 1, 7, 64])
def test_histogram_matches_reference(tmp_path, rng, bins):
    values = np.concatenate([rng.standard_normal(500) * 3, rng.exponential(size=300), [0.0]])
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("h", values, 1, bins=bins)
        default_bins = _tensorflow_edges()
    _, h = histo_of(event_files(tmp_path)[0], "h")
    counts, limits = reference_histogram(values, default_bins if bins == "tensorflow" else bins)
    assert list(h.bucket) == counts
    assert list(h.bucket_limit) == pytest.approx(limits, rel=1e-12)


def _tensorflow_edges():
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0.0] + pos


def test_add_histogram_errors(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("e", retorch.zeros(0))
        with pytest.raises(ValueError, match="finite"):
            w.add_histogram("nan", [1.0, float("nan")])
        with pytest.raises(ValueError, match="not supported"):
            w.add_histogram("auto", [1.0], bins="auto")


def test_add_text(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("notes", "hello **world**", 2)
        w.add_text("notes", "ünïcode ✓", 3)
    acc = accumulate(tmp_path)
    assert acc.Tags()["tensors"] == ["notes/text_summary"]
    events = acc.Tensors("notes/text_summary")
    assert [e.step for e in events] == [2, 3]
    texts = [e.tensor_proto.string_val[0].decode() for e in events]
    assert texts == ["hello **world**", "ünïcode ✓"]
    assert events[0].tensor_proto.dtype == 7  # DT_STRING
    assert [d.size for d in events[0].tensor_proto.tensor_shape.dim] == [1]
    (raw,) = [v for e in read_events(event_files(tmp_path)[0]) for v in e.summary.value][:1]
    assert raw.metadata.plugin_data.plugin_name == "text"
    assert acc.PluginTagToContent("text") == {"notes/text_summary": b""}


def test_records_have_valid_crcs_and_corruption_is_detected(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        for i in range(20):
            w.add_scalar("x", float(i), i)
        w.add_histogram("h", np.arange(10.0), 1)
        w.add_text("t", "abc")
    path = event_files(tmp_path)[0]
    records = read_records_strict(path)  # raises DataLossError on any bad CRC
    assert len(records) == 23
    data = bytearray(open(path, "rb").read())
    # Walk the framing by hand as well: u64 length, u32 masked crc, data, u32 masked crc.
    at, n = 0, 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        assert struct.unpack_from("<I", data, at + 8)[0] == pywrap_tensorflow.masked_crc32c(
            bytes(data[at:at + 8]))
        payload = bytes(data[at + 12:at + 12 + length])
        assert struct.unpack_from("<I", data, at + 12 + length)[0] == \
            pywrap_tensorflow.masked_crc32c(payload)
        at += 16 + length
        n += 1
    assert n == 23
    data[len(data) // 2] ^= 0x40
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / os.path.basename(path)).write_bytes(bytes(data))
    with pytest.raises(tb_errors.DataLossError, match="crc32"):
        read_records_strict(str(bad / os.path.basename(path)))


def test_flush_makes_events_visible_before_close(tmp_path):
    w = SummaryWriter(str(tmp_path), max_queue=1000, flush_secs=1000)
    w.add_scalar("a", 1.0, 1)
    w.flush()
    assert len(read_events(event_files(tmp_path)[0])) == 2
    w.close()
    w.close()  # idempotent


def test_reopens_after_close(tmp_path):
    w = SummaryWriter(str(tmp_path))
    w.add_scalar("a", 1.0, 1)
    w.close()
    w.add_scalar("a", 2.0, 2)
    w.close()
    files = event_files(tmp_path)
    assert len(files) == 2
    acc = accumulate(tmp_path)  # a run directory with several files reads as one run
    assert [(e.step, e.value) for e in acc.Scalars("a")] == [(1, 1.0), (2, 2.0)]


def test_bad_log_dir_is_a_clear_error(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(RuntimeError, match="cannot create log directory"):
        SummaryWriter(str(not_a_dir))
    with pytest.raises(RuntimeError, match="cannot create log directory.*file/sub"):
        SummaryWriter(str(not_a_dir / "sub"))
    with pytest.raises(ValueError, match="one-element"):
        SummaryWriter(str(tmp_path / "ok")).add_scalar("x", retorch.ones(2))
    with pytest.raises(NotImplementedError, match="purge_step"):
        SummaryWriter(str(tmp_path / "ok"), purge_step=3)


def test_default_log_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    w.close()
    import socket
    assert w.log_dir.startswith("runs" + os.sep)
    assert w.log_dir.endswith("_" + socket.gethostname() + "_exp")
    assert len(event_files(tmp_path / w.log_dir)) == 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_matches_torch_summary_writer(tmp_path):
    """Same calls through torch.utils.tensorboard give the same Events (but wall times).
    (Histograms are compared with reference_histogram: torch 1.13's fails on numpy 1.24.)"""
    try:
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
    except ImportError as e:
        pytest.skip(f"torch.utils.tensorboard unavailable: {e}")

    def run(writer_cls, log_dir):
        w = writer_cls(str(log_dir))
        w.add_scalar("s", 0.3, 5, walltime=10.0)
        w.add_text("t", "some text", 8, walltime=13.0)
        w.add_scalars("m", {"a": 1.5, "b": -2.0}, 9, walltime=14.0)
        w.close()

    run(SummaryWriter, tmp_path / "ours")
    run(TorchWriter, tmp_path / "torch")

    def events(d):
        (path,) = event_files(d)
        return read_events(path)[1:]  # skip the file_version event (its wall time differs)

    for sub in ("", "m_a", "m_b"):
        ours, theirs = events(tmp_path / "ours" / sub), events(tmp_path / "torch" / sub)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert a == b, f"{sub}:\nours {a}\ntorch {b}"
            assert a.SerializeToString() == b.SerializeToString()
