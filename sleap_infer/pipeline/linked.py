"""Identity linking (``--link-tracklets``) at the end of a video, from its journal.

Trackers run online and journal their tracks batch by batch; sleap-nn's
identity linking needs the whole video, so it runs once the journal is
complete, just before the outputs are written from it. It reads the journal
once, keeping only compact arrays (:mod:`sleap_infer.tracking.linking.inputs`,
34 bytes a pose, plus 4 bytes a dimension where poses carry re-ID vectors; a
segmentation model's masks: their boxes, as the output holds the masks),
and answers one track id per pose (or mask); the outputs then read
the journal again with those ids in place of the tracker's. Nothing is saved
in between: the relabelling is a pure function of the journal, which is only
removed once every output is in place, so a run killed while linking (or
before its outputs are written) links again on ``--resume`` to the same ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from sleap_infer.core.polygons import packaged
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import Journal
from sleap_infer.tracking import registry
from sleap_infer.tracking.base import MASKS, POSES, track_name
from sleap_infer.tracking.online import track_names
from sleap_infer.tracking.options import TrackingOptions

if TYPE_CHECKING:  # the linker (and scipy) load when a run links, not with every predict
    from sleap_infer.pipeline.prepared import Retracked
    from sleap_infer.tracking.linking.inputs import LinkInput
    from sleap_infer.tracking.linking.link import LinkResult


@dataclass
class LinkedJournal(Journal):
    """A finished journal whose batches come back with the linked track ids."""

    relabel: np.ndarray | None = None  # (D,) int32: each detection's new id, journal order
    masks: bool = False  # ``relabel`` is for the masks (as the output holds them)
    names: tuple[str, ...] = ()  # the kept identities' track names; ``relabel`` indexes them
    # predict -t with a MOT tracker: every detection's track after the whole-video
    # pre-pass, in place of the online tracker's (pipeline/prepared.py); linking reads these
    retracked: Retracked | None = None

    @property
    def n_tracks(self) -> int:
        return len(self.names)

    def batches(self) -> Iterator[BatchPredictions]:
        base: Iterable[BatchPredictions] = super().batches()
        if self.retracked is not None:
            from sleap_infer.pipeline.prepared import with_tracks

            base = with_tracks(base, self.retracked, MASKS if self.masks else POSES)
        if self.relabel is None:
            yield from base
            return
        yield from relabelled(base, self.relabel, self.masks)


def relabelled(
    batches: Iterable[BatchPredictions], relabel: np.ndarray, masks: bool
) -> Iterator[BatchPredictions]:
    """``batches`` with each tracked pose (or mask) given its id from ``relabel``, which
    lists them in the order :func:`link_input` read them; untracked ones stay so."""
    at = 0
    for preds in batches:
        if masks:
            kept = packaged(preds.masks)
            new = relabel[at : at + len(kept)]
            at += len(kept)
            if kept.track is None or len(kept) == 0:
                yield preds
                continue
            track = np.where(kept.track >= 0, new, kept.track).astype(np.int32)
            score = np.array(kept.tracking_score, copy=True)
            score[(kept.track >= 0) & (new < 0)] = np.nan
            yield _replace(preds, masks=replace(kept, track=track, tracking_score=score))
            continue
        valid = np.asarray(preds.valid, bool)
        n = int(valid.sum())
        new = relabel[at : at + n]
        at += n
        if preds.class_ids is None or n == 0:
            yield preds
            continue
        ids = np.array(preds.class_ids, copy=True)
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


def link_input(batches: Iterable[BatchPredictions], masks: bool = False) -> LinkInput:
    """The batches' tracked poses (or ``masks``) as compact arrays, every predicted
    frame in order."""
    from sleap_infer.tracking.linking.inputs import LinkInput

    inp = LinkInput()
    if masks:
        _add_masks(inp, batches)
        return inp
    for preds in batches:
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


def _add_masks(inp: LinkInput, batches: Iterable[BatchPredictions]) -> None:
    """Each predicted frame's masks as the output holds them (empty ones dropped)."""
    from sleap_infer.tracking.base import MASKS
    from sleap_infer.tracking.common.boxes import raw_boxes
    from sleap_infer.tracking.online import mask_detections

    for preds in batches:
        masks = packaged(preds.masks)
        frames = preds.frame_indices if preds.frame_indices is not None else []
        for b, frame in enumerate(np.asarray(frames).tolist()):
            ks = masks.in_frame(b)
            det = mask_detections(masks, ks, int(frame))
            ids = masks.track[ks] if masks.track is not None else np.full(len(ks), -1)
            # a mask carries no re-ID vector in the journal
            inp.add_masks(int(frame), raw_boxes(det, MASKS)[0], det.scores, ids, None)


def track_buffer(options: TrackingOptions) -> int:
    """sleap-nn's linking reads the MOT ``track_buffer``: the option for a MOT tracker,
    the default (30) after the classic one."""
    from sleap_infer.tracking.linking.link import TRACK_BUFFER

    if options.tracker == "classic":
        return TRACK_BUFFER
    return int(options.with_tracker_defaults().track_buffer)  # type: ignore[arg-type]


def normalized(options: TrackingOptions) -> bool:
    """sleap-nn's MOT trackers (``animal`` preset) divide scores by the video's q95."""
    return options.tracker != "classic"


def high_threshold(options: TrackingOptions) -> float:
    """A gated vector's minimum score: sleap-nn's MOT default (0.5) after the classic
    tracker, the MOT tracker's ``--track-high-threshold`` after one."""
    from sleap_infer.tracking.linking.link import HIGH_THRESHOLD

    if options.tracker == "classic":
        return HIGH_THRESHOLD
    return float(options.with_tracker_defaults().track_high_threshold)  # type: ignore[arg-type]


@dataclass
class Linked:
    """What identity linking decided for one video."""

    relabel: np.ndarray  # (D,) int32: each detection's position in ``names``, -1 untracked
    names: tuple[str, ...]  # the kept identities, under their tracker names
    result: LinkResult


def link_batches(
    batches: Callable[[], Iterable[BatchPredictions]], options: TrackingOptions, masks: bool
) -> Linked:
    """Link one video's tracked batches (``batches()`` reads them once, in order).

    sleap-nn lists only the identities linking kept, under their tracker names; the
    outputs index their track list by id, so the new ids are positions in that list.
    """
    from sleap_infer.tracking.linking.link import link_tracks

    new, result = link_tracks(
        link_input(batches(), masks), options.max_tracks, track_buffer(options), None,
        high_threshold(options), normalize_scores=normalized(options),
    )  # fmt: skip
    kept = np.unique(new[new >= 0])
    position = np.where(new >= 0, np.searchsorted(kept, np.maximum(new, 0)), -1)
    names = tuple(track_name(int(k)) for k in kept)
    return Linked(position.astype(np.int32), names, result)


def link_journal(
    journal: Journal, options: TrackingOptions, masks: bool = False
) -> tuple[Journal, LinkResult]:
    """``journal`` with linked track ids (the journal itself when linking is off);
    ``masks``: the run tracks a segmentation model's masks."""
    from sleap_infer.tracking.linking.link import LinkResult

    if not options.links:
        return journal, LinkResult()
    linked = link_batches(journal.batches, options, masks)
    values = {f.name: getattr(journal, f.name) for f in fields(journal)}
    values.update(relabel=linked.relabel, masks=masks, names=linked.names)
    return LinkedJournal(**values), linked.result


def prepares(options: TrackingOptions | None) -> bool:
    """Whether ``predict -t`` tracks again at the video's end (pipeline/prepared.py): with
    sleap-nn's MOT trackers, as sleap-nn's predictor tracks them after its pre-pass."""
    return options is not None and registry.entry(options.tracker).family == registry.MOT


def prepare_journal(
    journal: Journal, options: TrackingOptions, masks: bool, n_nodes: int, vectors: bool
) -> tuple[Journal, dict[str, Any] | None]:
    """``journal`` with sleap-nn's MOT tracks after the whole-video pre-pass (the journal
    itself when ``options`` name no MOT tracker), and what the pre-pass measured."""
    if not prepares(options):
        return journal, None
    from sleap_infer.pipeline.prepared import retrack_batches

    carrier = MASKS if masks else POSES
    retracked = retrack_batches(journal.batches, options, carrier, n_nodes, vectors)
    values = {f.name: getattr(journal, f.name) for f in fields(journal)}
    values.update(masks=masks, names=track_names(retracked.n_tracks), retracked=retracked)
    return LinkedJournal(**values), retracked.calibration


def output_track_names(journal: Journal) -> tuple[str, ...]:
    """The output's track list: the tracker's ids, or the identities linking kept."""
    if isinstance(journal, LinkedJournal):
        return journal.names
    return track_names(journal.n_tracks)
