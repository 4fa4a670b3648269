"""An embedding model on its own: re-ID vectors for the detections a SLEAP project holds.

sleap-nn's lone-embedding route (``sleap-nn predict -m embedding -i labels.slp
--save_embeddings slp``) takes existing detections, not frames: every
detection of one *carrier* (masks or poses) is cropped from its frame and
embedded, and the input labels come back unchanged but for
``identity_embedding`` on each embedded detection. The carrier is the model's
``detection_mode`` when the file holds any such detection, else the other
kind (sleap-nn's rule). Old vectors are cleared first; empty masks and poses
without a finite centre get none. The labels are already in memory (sleap-io
loads them whole), so the output is written in one atomic step rather than
through a journal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import VideoError
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.provenance import now_iso, package_versions
from sleap_infer.layers.base import InferenceLayer
from sleap_infer.model.loader import LoadedModel
from sleap_infer.pipeline.labels_job import (
    check_destination,
    load_labels,
    require_slp,
    save_labels,
)


@dataclass
class EmbeddingRun:
    """What one labels file gave: frames visited, vectors written, the carrier used."""

    frames: int = 0
    vectors: int = 0
    carrier: str = ""
    seconds: float = 0.0


def choose_carrier(labels: sio.Labels, detection_mode: str | None) -> str:
    """``mask`` or ``pose``: the model's mode if the file holds such detections, else the other."""
    has = {
        "mask": any(lf.masks for lf in labels.labeled_frames),
        "pose": any(lf.instances for lf in labels.labeled_frames),
    }
    first = detection_mode if detection_mode in has else "mask"
    other = "pose" if first == "mask" else "mask"
    return first if has[first] or not has[other] else other


def _mask_set(masks: list[Any]) -> MaskSet:
    return MaskSet(
        frame=np.zeros(len(masks), np.int32),
        score=np.zeros(len(masks), np.float32),
        size=np.asarray([(m.height, m.width) for m in masks], np.int32).reshape(-1, 2),
        scale=np.asarray([m.scale for m in masks], np.float64).reshape(-1, 2),
        offset=np.asarray([m.offset for m in masks], np.float64).reshape(-1, 2),
        rle=np.concatenate([np.asarray(m.rle_counts, np.uint32) for m in masks]),
        rle_len=np.asarray([len(m.rle_counts) for m in masks], np.int64),
    )


class LabelsEmbedder:
    """A lone embedding model's layer, embedding the detections of ``.slp`` files."""

    def __init__(self, model: LoadedModel, layer: InferenceLayer) -> None:
        self.model = model
        self.layer = layer  # the model's embedding layer, built by the pipeline

    def embed_file(
        self,
        source: Path,
        output: Path,
        before_save: Callable[[sio.Labels], dict[str, Any]] | None = None,
        vectors: bool = True,
    ) -> EmbeddingRun:
        """Embed every carrier detection of ``source``; write the labels to ``output``.

        ``before_save`` (e.g. re-tracking by the new vectors) sees the embedded labels
        before they are written; what it returns joins the provenance. ``vectors`` False
        writes the labels without them (``--save-embeddings none`` after re-tracking)."""
        labels = load_labels(source)
        check_destination(source, output, labels)
        started = now_iso()
        t0 = time.perf_counter()
        settings = self.model.config.embedding
        run = EmbeddingRun(
            carrier=choose_carrier(labels, getattr(settings, "detection_mode", None))
        )
        for lf in labels.labeled_frames:
            detections = self._detections(lf, run.carrier)
            for det in (*lf.instances, *lf.masks):
                det.identity_embedding = None  # old vectors never survive a new model
            if not detections:
                continue
            run.frames += 1
            run.vectors += self._embed_frame(lf, detections, run.carrier)
        run.seconds = time.perf_counter() - t0
        labels.provenance = {
            **dict(labels.provenance or {}),
            "sleap_infer": "embed",
            "model_paths": [str(self.model.path.resolve())],
            "checkpoint_sha256": [self.model.checkpoint_sha256],
            "embedding_carrier": run.carrier,
            "inference_start_timestamp": started,
            "inference_end_timestamp": now_iso(),
            "versions": package_versions(),
        }
        if before_save is not None:
            labels.provenance.update(before_save(labels))
        save_labels(labels, output, vectors=vectors)
        return run

    @staticmethod
    def _detections(lf: sio.LabeledFrame, carrier: str) -> list[Any]:
        if carrier == "mask":
            return [m for m in lf.masks if m.area >= 1]
        return list(lf.instances)

    def _embed_frame(self, lf: sio.LabeledFrame, detections: list[Any], carrier: str) -> int:
        image = lf.image
        if image is None:
            raise VideoError(f"frame {lf.frame_idx} of {lf.video.filename}: image not readable")
        frames = np.asarray(image)[None]
        if carrier == "mask":
            vectors = self.layer.embed_masks(frames, _mask_set(detections))
        else:
            points = np.stack([inst.numpy() for inst in detections])[None].astype(np.float32)
            vectors = self.layer.embed_points(frames, points)[0]
        written = 0
        for det, vector in zip(detections, vectors):
            if np.isfinite(vector).all():
                det.identity_embedding = sio.Embedding(np.asarray(vector, np.float32))
                written += 1
        return written


def require_labels_input(path: Path) -> None:
    require_slp(
        path,
        "an embedding model alone embeds the detections of a SLEAP project (.slp); for a "
        "video, add a centroid or box detector model (--model DIR)",
    )
