"""Identity linking (``--link-tracklets``) at the end of a video, from its journal.

Trackers run online and journal their tracks batch by batch; sleap-nn's
identity linking needs the whole video, so it runs once the journal is
complete, just before the outputs are written from it. It reads the journal
once, keeping only compact arrays (:mod:`sleap_infer.tracking.linking_input`,
34 bytes a pose, plus 4 bytes a dimension where poses carry re-ID vectors),
and answers one track id per pose; the outputs then read
the journal again with those ids in place of the tracker's. Nothing is saved
in between: the relabelling is a pure function of the journal, which is only
removed once every output is in place, so a run killed while linking (or
before its outputs are written) links again on ``--resume`` to the same ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.tracking import TrackingOptions
from sleap_infer.journal import Journal

if TYPE_CHECKING:  # the linker (and scipy) load when a run links, not with every predict
    from sleap_infer.tracking.linking import LinkResult
    from sleap_infer.tracking.linking_input import LinkInput


@dataclass
class LinkedJournal(Journal):
    """A finished journal whose batches come back with the linked track ids."""

    relabel: np.ndarray | None = None  # (D,) int32: each valid pose's new id, journal order

    def batches(self) -> Iterator[BatchPredictions]:
        at = 0
        for preds in super().batches():
            valid = np.asarray(preds.valid, bool)
            n = int(valid.sum())
            if self.relabel is None or preds.class_ids is None or n == 0:
                yield preds
                continue
            ids = np.array(preds.class_ids, copy=True)
            new = self.relabel[at : at + n]
            at += n
            ids[valid] = new
            scores = None
            if preds.class_scores is not None:
                scores = np.array(preds.class_scores, copy=True)
                scores[valid] = np.where(new >= 0, scores[valid], np.nan)
            yield _replace(preds, class_ids=ids.astype(preds.class_ids.dtype), class_scores=scores)


def _replace(preds: BatchPredictions, **changes: Any) -> BatchPredictions:
    values = {f.name: getattr(preds, f.name) for f in fields(preds)}
    values.update(changes)
    return BatchPredictions(**values)


def link_input(journal: Journal) -> LinkInput:
    """The journal's tracked poses as compact arrays, every predicted frame in order."""
    from sleap_infer.tracking.linking_input import LinkInput

    inp = LinkInput()
    for preds in journal.batches():
        valid = np.asarray(preds.valid, bool)
        frames = preds.frame_indices if preds.frame_indices is not None else []
        for b, frame in enumerate(np.asarray(frames).tolist()):
            rows = valid[b]
            ids = (
                np.asarray(preds.class_ids[b])[rows]
                if preds.class_ids is not None
                else np.full(int(rows.sum()), -1)
            )
            vectors = None if preds.embeddings is None else preds.embeddings[b][rows]
            inp.add_frame(
                frame,
                preds.points[b][rows],
                preds.point_scores[b][rows],
                preds.instance_scores[b][rows],
                ids,
                vectors,
            )
    return inp


def track_buffer(options: TrackingOptions) -> int:
    """sleap-nn's linking reads the MOT ``track_buffer``: the option for a MOT tracker,
    the default (30) after the classic one."""
    from sleap_infer.tracking.linking import TRACK_BUFFER

    if options.tracker == "classic":
        return TRACK_BUFFER
    return int(options.with_tracker_defaults().track_buffer)  # type: ignore[arg-type]


def normalized(options: TrackingOptions) -> bool:
    """sleap-nn's MOT trackers (``animal`` preset) divide scores by the video's q95."""
    return options.tracker != "classic"


def high_threshold(options: TrackingOptions) -> float:
    """A gated vector's minimum score: sleap-nn's MOT default (0.5) after the classic
    tracker, the MOT tracker's ``--track-high-threshold`` after one."""
    from sleap_infer.tracking.linking import HIGH_THRESHOLD

    if options.tracker == "classic":
        return HIGH_THRESHOLD
    return float(options.with_tracker_defaults().track_high_threshold)  # type: ignore[arg-type]


def link_journal(journal: Journal, options: TrackingOptions) -> tuple[Journal, LinkResult]:
    """``journal`` with linked track ids (the journal itself when linking is off)."""
    from sleap_infer.tracking.linking import LinkResult, link_tracks

    if not options.links:
        return journal, LinkResult()
    new, result = link_tracks(
        link_input(journal), options.max_tracks, track_buffer(options), None,
        high_threshold(options), normalize_scores=normalized(options),
    )  # fmt: skip
    values = {f.name: getattr(journal, f.name) for f in fields(journal)}
    return LinkedJournal(**values, relabel=new), result
