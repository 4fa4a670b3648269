"""Synthetic predictions for the output tests: four kinds of result (untracked
multi-animal, identities, single instance, nothing found) as journal batches, the
instances they hold (built independently of the writers), and one call that writes
them in any format."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.nwb_metadata import NwbMetadata
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import JournalWriter, read_journal
from sleap_infer.model.config import parse_config
from sleap_infer.sources.video import VideoInfo
from sleap_infer.writers.labels import make_skeleton, make_video
from sleap_infer.writers.outputs import is_complete, write_from_journal
from sleap_infer.writers.registry import get_format

from model_factory import config_dict

N_FRAMES = 12  # the video's length; frames 3 and 7 are never predicted (sparse on purpose)
CASES = ("untracked", "identities", "single", "empty")
HAS_NWB = importlib.util.find_spec("pynwb") is not None
needs_nwb = pytest.mark.skipif(not HAS_NWB, reason="pynwb not installed")


@dataclass
class Expected:
    """One predicted instance, as the test built it (independent of the writers)."""

    frame: int
    points: np.ndarray  # (nodes, 2)
    point_scores: np.ndarray
    score: float
    track: str | None


@dataclass
class Case:
    batches: list[BatchPredictions]
    model_type: str
    class_names: tuple[str, ...]

    @property
    def instances(self) -> list[Expected]:
        """Every valid instance, frame by frame in model order (the .slp's order)."""
        out = []
        for b in self.batches:
            for f, i in zip(*np.nonzero(b.valid)):
                cid = -1 if b.class_ids is None else int(b.class_ids[f, i])
                track = self.class_names[cid] if 0 <= cid < len(self.class_names) else None
                out.append(
                    Expected(
                        int(b.frame_indices[f]),
                        b.points[f, i],
                        b.point_scores[f, i],
                        float(b.instance_scores[f, i]),
                        track,
                    )
                )
        return out

    @property
    def predicted(self) -> list[int]:
        """Every frame the batches hold, those where nothing was found too."""
        return [int(f) for b in self.batches for f in b.frame_indices]

    def by_frame(self, placed_only: bool = False) -> dict[int, list[Expected]]:
        """Instances per frame; ``placed_only`` drops those an identity model gave no class."""
        frames: dict[int, list[Expected]] = {}
        for inst in self.instances:
            if placed_only and self.class_names and inst.track is None:
                continue
            frames.setdefault(inst.frame, []).append(inst)
        return frames


def make_case(kind: str, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    model_type = {"identities": "multi_class_bottomup", "single": "single_instance"}.get(
        kind, "bottomup"
    )
    n_inst = 1 if kind == "single" else 3
    frames = [f for f in range(N_FRAMES) if f not in (3, 7)]
    batches = []
    for start in range(0, len(frames), 4):
        idx = np.array(frames[start : start + 4])
        n = len(idx)
        points = rng.uniform(0, 90, (n, n_inst, 3, 2)).astype(np.float32)
        points[rng.uniform(size=(n, n_inst, 3)) < 0.15] = np.nan  # nodes not found
        valid = rng.uniform(size=(n, n_inst)) < 0.75
        valid[0, : min(2, n_inst)] = True  # at least one frame with two animals
        if start == 4:
            valid[1] = False  # and frame 6 where nothing was found, in every case
        if kind == "empty":
            valid[:] = False
        batch = BatchPredictions(
            points=points,
            point_scores=rng.uniform(0.2, 1, (n, n_inst, 3)).astype(np.float32),
            instance_scores=rng.uniform(0.5, 3, (n, n_inst)).astype(np.float32),
            valid=valid,
            frame_indices=idx,
        )
        if kind == "identities":
            ids = np.stack([rng.permutation(3) for _ in range(n)]).astype(np.int32) - 1
            batch.class_ids = ids  # -1, 0, 1 in a random order: one animal per frame has no class
            batch.class_scores = rng.uniform(0.5, 1, (n, n_inst)).astype(np.float32)
        batches.append(batch)
    class_names = ("female", "male") if kind == "identities" else ()
    return Case(batches, model_type, class_names)


def write(
    tmp_path: Path,
    case: Case,
    fmt_name: str,
    empty_frames: bool = True,
    nwb: NwbMetadata | None = None,
    fps: float = 30.0,
    skeleton: sio.Skeleton | None = None,
    video_name: str = "v.mp4",
    csv_empty_frames: bool = False,
) -> Path:
    journal_file = tmp_path / "j.partial"
    with JournalWriter(journal_file, header={"fingerprint": {}}) as w:
        for batch in case.batches:
            w.write_batch(batch)
    cfg = parse_config(config_dict(case.model_type))
    info = VideoInfo(tmp_path / video_name, N_FRAMES, fps, 64, 96, True, "h264")
    fmt = get_format(fmt_name)
    out = tmp_path / f"{video_name}.predictions{fmt.suffix}"
    write_from_journal(
        read_journal(journal_file),
        out,
        fmt,
        make_video(info),
        skeleton or make_skeleton(cfg),
        case.class_names,
        {"run": "test"},
        nwb=nwb,
        empty_frames=empty_frames,
        csv_empty_frames=csv_empty_frames,
    )
    assert is_complete(out, fmt)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != video_name)  # a test's video
    assert left == sorted(["j.partial", out.name])  # no temporary file
    return out


def expected_slots(case: Case) -> dict[tuple[int, int], Expected]:
    """(frame, slot) -> instance: identities by class, else by descending score."""
    slots = {}
    names = list(case.class_names)
    for frame, instances in case.by_frame(placed_only=True).items():
        if names:
            for inst in instances:
                slots[(frame, names.index(inst.track))] = inst
        else:
            ranked = sorted(instances, key=lambda inst: -inst.score)
            slots.update({(frame, k): inst for k, inst in enumerate(ranked)})
    return slots


def journal_from_labels(labels: sio.Labels, path: Path, class_names: tuple[str, ...]) -> Path:
    """A journal holding exactly the predictions of a ``.slp`` (float32 values survive)."""
    frames = list(labels)
    n_nodes = len(labels.skeleton.nodes)
    with JournalWriter(path, header={"fingerprint": {}}) as w:
        for start in range(0, len(frames), 4):
            group = frames[start : start + 4]
            n, n_inst = len(group), max(len(lf.instances) for lf in group)
            batch = BatchPredictions(
                points=np.full((n, n_inst, n_nodes, 2), np.nan, np.float32),
                point_scores=np.zeros((n, n_inst, n_nodes), np.float32),
                instance_scores=np.zeros((n, n_inst), np.float32),
                valid=np.zeros((n, n_inst), bool),
                class_ids=np.full((n, n_inst), -1, np.int32),
                class_scores=np.zeros((n, n_inst), np.float32),
                frame_indices=np.array([lf.frame_idx for lf in group]),
            )
            for b, lf in enumerate(group):
                for i, inst in enumerate(lf.instances):
                    batch.points[b, i] = inst.numpy()
                    batch.point_scores[b, i] = inst.points["score"]
                    batch.instance_scores[b, i] = inst.score
                    batch.valid[b, i] = True
                    if inst.track is not None:
                        batch.class_ids[b, i] = class_names.index(inst.track.name)
            w.write_batch(batch)
    return path
