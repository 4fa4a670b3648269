"""Re-ID embedding vectors as outputs: journal round trip (torn tail, resume), the
streaming ``.slp`` against ``sio.save_slp(..., save_embedding_vectors=True)`` dataset
by dataset, ``sio.load_slp`` putting each vector back on its instance, formats that
cannot hold vectors, and flat memory on a long run.

Run as a script
(``PYTHONPATH=tests python tests/writers/test_embedding_outputs.py memory FOLDER [FRAMES]``)
it prints the memory measurement as JSON; the test runs it in a subprocess.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import OutputError
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import JournalWriter, read_journal
from sleap_infer.writers.labels import LabelsBuilder
from sleap_infer.writers.outputs import estimate_bytes, write_from_journal
from sleap_infer.writers.registry import FORMATS
from sleap_infer.writers.slp_stream import FORMAT_IDENTITY, OWNER_INSTANCE, StreamingSlpWriter

from slp_tables import (
    assert_same_datasets,
    datasets,
    format_id,
    memory_numbers,
    rss_mb,
    run_memory_child,
    write_journal,
)

N_NODES = 2
DIM = 8


def _video(n_frames: int = 40) -> sio.Video:
    return sio.Video(
        filename="v.mp4",
        backend_metadata={"shape": [n_frames, 64, 64, 1], "fps": 30.0, "grayscale": True},
        open_backend=False,
    )


def _skeleton() -> sio.Skeleton:
    return sio.Skeleton(nodes=["a", "b"], edges=[], name="s")


def _batch(
    rng: np.random.Generator,
    first: int,
    n: int = 4,
    n_inst: int = 3,
    vectors: bool = True,
    dim: int = DIM,
) -> BatchPredictions:
    """``n`` frames of up to ``n_inst`` instances; about a third of the slots' vectors NaN
    (no vector), and invalid slots hold finite vectors that no output may keep."""
    preds = BatchPredictions(
        points=rng.uniform(0, 60, (n, n_inst, N_NODES, 2)).astype(np.float32),
        point_scores=rng.uniform(size=(n, n_inst, N_NODES)).astype(np.float32),
        instance_scores=rng.uniform(size=(n, n_inst)).astype(np.float32),
        valid=rng.uniform(size=(n, n_inst)) < 0.7,
        frame_indices=np.arange(first, first + n, dtype=np.int64),
    )
    if vectors:
        emb = rng.normal(size=(n, n_inst, dim)).astype(np.float32)
        emb[rng.uniform(size=(n, n_inst)) < 0.33] = np.nan
        preds.embeddings = emb
    return preds


def _mix(seed: int = 0) -> list[BatchPredictions]:
    """Batches with vectors, one without any (a pose batch), and one with all NaN."""
    rng = np.random.default_rng(seed)
    batches = [_batch(rng, 0), _batch(rng, 4, vectors=False), _batch(rng, 8), _batch(rng, 12)]
    batches[3].embeddings[:] = np.nan
    batches.append(_batch(rng, 16, n=6))
    return batches


def _expected(batches: list[BatchPredictions]) -> dict[tuple[int, int], np.ndarray | None]:
    """Per (frame index, k-th valid instance of the frame): its vector, or None."""
    out: dict[tuple[int, int], np.ndarray | None] = {}
    for preds in batches:
        emb = getattr(preds, "embeddings", None)
        for b, frame in enumerate(preds.frame_indices.tolist()):
            for k, j in enumerate(np.flatnonzero(preds.valid[b])):
                vec = None if emb is None or np.isnan(emb[b, j]).all() else emb[b, j]
                out[(frame, k)] = vec
    return out


def _stream(path: Path, batches, **hints) -> None:
    with StreamingSlpWriter(path, _video(), _skeleton(), [], {"run": 1}, **hints) as writer:
        for b in batches:
            writer.add(b)


def _reference(path: Path, batches: list[BatchPredictions]) -> sio.Labels:
    builder = LabelsBuilder(_video(), _skeleton())
    for b in batches:
        builder.add(b)
    labels = builder.labels({"run": 1})
    sio.save_slp(labels, str(path), save_embedding_vectors=True)
    return labels


def _loaded_vectors(path: Path) -> dict[tuple[int, int], np.ndarray | None]:
    out: dict[tuple[int, int], np.ndarray | None] = {}
    for lf in sio.load_slp(str(path)):
        for k, inst in enumerate(lf.instances):
            emb = inst.identity_embedding
            out[(lf.frame_idx, k)] = None if emb is None else emb.vector
    return out


def _same_vectors(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for key, vec in want.items():
        if vec is None:
            assert got[key] is None, key
        else:
            assert got[key] is not None, key
            assert got[key].dtype == np.float32, key
            assert np.array_equal(got[key], vec), key


# --- journal ----------------------------------------------------------------------------


def test_journal_keeps_vectors_and_counts_them(tmp_path: Path) -> None:
    batches = _mix()
    journal = read_journal(write_journal(tmp_path / "j.partial", batches))
    kept = [v for v in _expected(batches).values() if v is not None]
    assert journal.totals.embeddings == len(kept) > 0
    assert journal.totals.embedding_bytes == 4 * DIM * len(kept)
    assert journal.totals.instances == sum(b.n_instances for b in batches)
    back = list(journal.batches())
    assert len(back) == len(batches)
    for want, got in zip(batches, back):
        emb = getattr(want, "embeddings", None)
        if emb is None:
            assert getattr(got, "embeddings", None) is None
            continue
        assert got.embeddings.dtype == np.float32
        assert np.array_equal(got.embeddings, emb, equal_nan=True)
        assert np.array_equal(got.valid, want.valid)


def test_vectors_are_stored_as_float32(tmp_path: Path) -> None:
    preds = _batch(np.random.default_rng(1), 0)
    preds.embeddings = preds.embeddings.astype(np.float64)
    (back,) = read_journal(write_journal(tmp_path / "j.partial", [preds])).batches()
    assert back.embeddings.dtype == np.float32
    assert np.array_equal(back.embeddings, preds.embeddings.astype(np.float32), equal_nan=True)


def test_vectors_that_do_not_match_the_instance_slots_are_refused(tmp_path: Path) -> None:
    preds = _batch(np.random.default_rng(2), 0)
    preds.embeddings = preds.embeddings[:, :2]
    with (
        JournalWriter(tmp_path / "j.partial", header={"fingerprint": {}}) as w,
        pytest.raises(ValueError, match="do not match"),
    ):
        w.write_batch(preds)
    assert read_journal(tmp_path / "j.partial").n_predicted == 0


def test_vectors_survive_a_torn_tail_and_the_resumed_run(tmp_path: Path) -> None:
    batches = _mix(3)
    path = write_journal(tmp_path / "j.partial", batches[:3])
    intact = path.stat().st_size
    write_journal(tmp_path / "k.partial", batches[:4])
    whole = (tmp_path / "k.partial").read_bytes()
    path.write_bytes(whole[: intact + (len(whole) - intact) // 2])  # record 4 torn
    journal = read_journal(path)
    assert journal.torn_bytes > 0 and journal.valid_bytes == intact
    assert (
        journal.totals.embeddings
        == read_journal(write_journal(tmp_path / "x.partial", batches[:3])).totals.embeddings
    )
    with JournalWriter(path, existing=journal) as w:
        for b in batches[3:]:
            w.write_batch(b)
    resumed = read_journal(path)
    assert resumed.torn_bytes == 0
    full = read_journal(write_journal(tmp_path / "y.partial", batches))
    assert resumed.totals.embeddings == full.totals.embeddings
    assert resumed.totals.embedding_bytes == full.totals.embedding_bytes
    for want, got in zip(batches, resumed.batches()):
        emb = getattr(want, "embeddings", None)
        got_emb = getattr(got, "embeddings", None)
        assert (emb is None) == (got_emb is None)
        if emb is not None:
            assert np.array_equal(got_emb, emb, equal_nan=True)


# --- .slp -------------------------------------------------------------------------------


def test_slp_matches_sleap_io_dataset_by_dataset(tmp_path: Path) -> None:
    batches = _mix(4)
    _reference(tmp_path / "ref.slp", batches)
    _stream(tmp_path / "got.slp", batches)
    assert_same_datasets(tmp_path / "ref.slp", tmp_path / "got.slp")
    tables = datasets(tmp_path / "got.slp")
    n = sum(v is not None for v in _expected(batches).values())
    assert tables["embeddings/vectors"].shape == (n, DIM)
    assert (tables["embeddings/owner_type"] == OWNER_INSTANCE).all()
    assert np.all(np.diff(tables["embeddings/owner_id"]) > 0)
    assert tables["embeddings/owner_id"].max() < len(tables["instances"])
    assert format_id(tmp_path / "got.slp") == FORMAT_IDENTITY


def test_load_slp_puts_each_vector_back_on_its_instance(tmp_path: Path) -> None:
    batches = _mix(5)
    want = _expected(batches)
    assert any(v is None for v in want.values()) and any(v is not None for v in want.values())
    _stream(tmp_path / "got.slp", batches)
    _same_vectors(_loaded_vectors(tmp_path / "got.slp"), want)
    _reference(tmp_path / "ref.slp", batches)
    _same_vectors(_loaded_vectors(tmp_path / "ref.slp"), want)


def test_many_batches_past_the_chunk_size_still_match(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    batches = [_batch(rng, 16 * k, n=16, n_inst=4, dim=64) for k in range(40)]
    _reference(tmp_path / "ref.slp", batches)
    _stream(tmp_path / "got.slp", batches, expected_embeddings=10)  # a low guess: more chunks
    assert_same_datasets(tmp_path / "ref.slp", tmp_path / "got.slp")
    with h5py.File(tmp_path / "got.slp", "r") as f:
        vectors = f["embeddings/vectors"]
        assert vectors.chunks[1] == 64 and vectors.chunks[0] < len(vectors)
    _same_vectors(_loaded_vectors(tmp_path / "got.slp"), _expected(batches))


def test_no_vector_found_leaves_no_embeddings_group(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    batches = [_batch(rng, 0), _batch(rng, 4, vectors=False)]
    batches[0].embeddings[:] = np.nan
    _reference(tmp_path / "ref.slp", batches)
    _stream(tmp_path / "got.slp", batches)
    assert_same_datasets(tmp_path / "ref.slp", tmp_path / "got.slp")
    with h5py.File(tmp_path / "got.slp", "r") as f:
        assert "embeddings" not in f
    assert format_id(tmp_path / "got.slp") < FORMAT_IDENTITY


def test_a_vector_of_another_length_is_an_error(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    batches = [_batch(rng, 0), _batch(rng, 4, dim=DIM + 1)]
    with pytest.raises(ValueError, match="embedding vectors of 9 values after 8"):
        _stream(tmp_path / "got.slp", batches)


def test_labels_builder_sets_identity_embedding(tmp_path: Path) -> None:
    batches = _mix(9)
    labels = _reference(tmp_path / "ref.slp", batches)
    got = {
        (lf.frame_idx, k): None if i.identity_embedding is None else i.identity_embedding.vector
        for lf in labels
        for k, i in enumerate(lf.instances)
    }
    _same_vectors(got, _expected(batches))


# --- formats ----------------------------------------------------------------------------


def _from_journal(tmp_path: Path, batches: list[BatchPredictions], fmt: str) -> Path:
    journal = read_journal(write_journal(tmp_path / "j.partial", batches))
    out = tmp_path / f"out.{fmt}"
    write_from_journal(journal, out, FORMATS[fmt], _video(), _skeleton(), (), {"run": 1})
    return out


def test_write_from_journal_writes_the_vectors_to_slp(tmp_path: Path) -> None:
    batches = _mix(10)
    out = _from_journal(tmp_path, batches, "slp")
    _same_vectors(_loaded_vectors(out), _expected(batches))
    _reference(tmp_path / "ref.slp", batches)
    assert_same_datasets(tmp_path / "ref.slp", out)


@pytest.mark.parametrize("fmt", ["csv", "analysis-h5", "nwb", "dlc-csv"])
def test_formats_without_vectors_refuse_a_journal_with_vectors(tmp_path: Path, fmt: str) -> None:
    batches = _mix(11)
    n = sum(v is not None for v in _expected(batches).values())
    with pytest.raises(OutputError) as err:
        _from_journal(tmp_path, batches, fmt)
    message = str(err.value)
    assert "\n" not in message
    assert message == (
        f"{tmp_path / f'out.{fmt}'}: --format {fmt} has no place for re-ID embedding vectors "
        f"({n} predicted, kept in {tmp_path / 'j.partial'}); use --format slp"
    )
    assert not (tmp_path / f"out.{fmt}").exists()


def test_a_journal_whose_vectors_are_all_nan_writes_any_format(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    batches = [_batch(rng, 0)]
    batches[0].embeddings[:] = np.nan
    out = _from_journal(tmp_path, batches, "analysis-h5")
    assert out.is_file()


def test_formats_without_vectors_refuse_them_before_writing(tmp_path: Path) -> None:
    journal = read_journal(write_journal(tmp_path / "j.partial", _mix(13)))
    out = tmp_path / "x.csv"
    with pytest.raises(OutputError, match="has no place for re-ID embedding vectors"):
        write_from_journal(journal, out, FORMATS["csv"], _video(), _skeleton(), (), {})
    assert not out.exists()
    empty = read_journal(
        write_journal(tmp_path / "e.partial", [_batch(np.random.default_rng(0), 0, vectors=False)])
    )
    write_from_journal(empty, out, FORMATS["csv"], _video(), _skeleton(), (), {})
    assert out.exists()


def test_formats_hold_embeddings() -> None:
    assert {n for n, f in FORMATS.items() if f.holds_embeddings} == {"slp"}


def test_size_estimate_counts_vectors(tmp_path: Path) -> None:
    rng = np.random.default_rng(14)
    batches = [_batch(rng, 4 * k, dim=64) for k in range(10)]
    with_vectors = read_journal(write_journal(tmp_path / "j.partial", batches))
    for b in batches:
        b.embeddings = None
    without = read_journal(write_journal(tmp_path / "e.partial", batches))
    assert with_vectors.totals.instances == without.totals.instances
    extra = estimate_bytes(with_vectors, N_NODES, FORMATS["slp"]) - estimate_bytes(
        without, N_NODES, FORMATS["slp"]
    )
    assert extra >= with_vectors.totals.embedding_bytes + 9 * with_vectors.totals.embeddings
    assert with_vectors.totals.embedding_bytes == 4 * 64 * with_vectors.totals.embeddings
    out = tmp_path / "out.slp"
    write_from_journal(with_vectors, out, FORMATS["slp"], _video(), _skeleton(), (), {})
    assert out.stat().st_size <= estimate_bytes(with_vectors, N_NODES, FORMATS["slp"])


# --- memory -----------------------------------------------------------------------------


def measure_memory(folder: Path, n_frames: int = 20000) -> dict[str, float]:
    """Journal, then stream to ``.slp``, ``n_frames`` frames of 2 instances with a 128-d
    vector each, sampling RSS after every batch; the baseline follows a warm-up run."""
    per_batch, dim = 16, 128
    rng = np.random.default_rng(0)
    pool = []
    for _ in range(8):
        preds = _batch(rng, 0, n=per_batch, n_inst=2, dim=dim)
        preds.valid[:] = True
        preds.embeddings = rng.normal(size=(per_batch, 2, dim)).astype(np.float32)
        pool.append(preds)

    def batch(k: int) -> BatchPredictions:
        preds = pool[k % len(pool)]
        preds.frame_indices = np.arange(k * per_batch, (k + 1) * per_batch, dtype=np.int64)
        return preds

    video = _video(n_frames)

    def stream(path: Path, batches, journal=None, sample=None) -> None:
        hints = (
            {}
            if journal is None
            else {
                "expected_instances": journal.totals.instances,
                "expected_frames": journal.totals.frames_with_instances,
                "expected_embeddings": journal.totals.embeddings,
            }
        )
        with StreamingSlpWriter(path, video, _skeleton(), [], {}, **hints) as w:
            for preds in batches:
                w.add(preds)
                if sample is not None:
                    sample.append(rss_mb())

    warm = write_journal(folder / "warm.partial", [batch(k) for k in range(40)])
    stream(folder / "warm.slp", read_journal(warm).batches())
    base = rss_mb()
    samples: list[float] = []
    start = time.perf_counter()
    n_batches = n_frames // per_batch
    with JournalWriter(folder / "run.partial", header={"fingerprint": {}}) as jw:
        for k in range(n_batches):
            jw.write_batch(batch(k))
            samples.append(rss_mb())
    journal = read_journal(folder / "run.partial")
    journal_peak = max(samples)
    stream(folder / "run.slp", journal.batches(), journal, samples)
    seconds = time.perf_counter() - start
    with h5py.File(folder / "run.slp", "r") as f:
        assert f["embeddings/vectors"].shape == (journal.totals.embeddings, dim)
        assert f["embeddings/owner_id"][-1] == journal.totals.instances - 1
        last = pool[(n_batches - 1) % len(pool)].embeddings[-1, -1]
        assert np.array_equal(f["embeddings/vectors"][-1], last)
    return {
        **memory_numbers(folder, base, samples, journal_peak, seconds),
        "frames": n_batches * per_batch,
        "vectors": journal.totals.embeddings,
        "dim": dim,
    }


def test_memory_stays_flat_over_a_long_embedding_run(tmp_path: Path) -> None:
    numbers = run_memory_child(__file__, tmp_path, 20000)
    assert numbers["vectors"] == 40_000
    # The vectors alone are 20 MB (40 000 x 128 float32), sio objects several times
    # that; flat means the peak stays within the writers' 256 KB buffers per table.
    assert numbers["growth_mb"] < 12.0, numbers


if __name__ == "__main__" and sys.argv[1:2] == ["memory"]:
    frames = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    print(json.dumps(measure_memory(Path(sys.argv[2]), frames)))
