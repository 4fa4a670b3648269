"""sleap-nn 0.3.5's identity linking (``--link_tracklets``), offline, at a video's end.

After a video is tracked (any tracker), sleap-nn's ``link_tracklets`` treats
every track as an identity and

0. with re-ID vectors calibrated for linking on this video
   (:mod:`sleap_infer.tracking.common.appearance`), corrects swaps at
   crossings (:mod:`sleap_infer.tracking.linking.swaps`) and accepts gap links
   by appearance (threshold and margin over the proven-different competitors),
   also past the spatial gate after long gaps;
1. links an identity that ends to one that starts later when they never share
   a frame, the later one starts within the spatial gate of the earlier one's
   end (radius ``body + 3 s f(gap)``, ``s`` the calibrated per-step motion),
   the gap is at most 4 track buffers, and the pair is *unique*: no other
   feasible predecessor or successor competes on that window's frontier, and
   no identity could take either end inside one of its own gaps;
2. with a known number of animals ``N`` (``--max-tracks``), keeps ``N``
   anchors (the best-supported identities present together) and gives every
   other tracklet to the anchor it fits (never co-occurring apart from
   duplicate detections; spatially gated; cheapest junction), most
   constrained first; a tracklet that fits none is untracked.

Merged identities keep the earlier identity's track id. Ported rule for rule
from ``sleap_nn/tracking/mot/linking.py``, for poses and for masks (a mask is a
box that is never a single-node pose: see
:mod:`~sleap_infer.tracking.linking.inputs`). It works from :class:`LinkInput` (compact arrays, see
:mod:`sleap_infer.tracking.linking.inputs`) and answers one new track id per
detection: a pure function of the tracked detections, so a run killed while
linking simply links again on ``--resume``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sleap_infer.tracking.common.appearance import link_rules, unit_rows
from sleap_infer.tracking.common.calibration import calibrate_geometry, frame_steps
from sleap_infer.tracking.common.frame_blocks import (
    frame_blocks,
    frame_layout,
    in_frame_order,
    upper_pairs,
)
from sleap_infer.tracking.linking.closed import ClosedSet
from sleap_infer.tracking.linking.inputs import LinkInput
from sleap_infer.tracking.linking.linker import Linker
from sleap_infer.tracking.linking.swaps import correct_swaps

TRACK_BUFFER = 30  # sleap-nn's MOTParams default: tracklet split and window scale
HIGH_THRESHOLD = 0.5  # MOTParams.track_high_threshold: a gated vector's minimum score
BOX_PADDING = 0.1  # MOTParams.box_padding: padded boxes for the overlap tests
ISOLATION_IOU = 0.1  # a gated vector's detection overlaps no other by this (strict <)
AMBIGUITY_IOU = 0.1  # two identities overlapping this much are in an ambiguity event
MIN_VISIBLE_FRACTION = 0.5  # a gated vector's detection shows at least half its nodes


@dataclass
class LinkResult:
    """What linking did to one video (sleap-nn's ``LinkingResult`` counts)."""

    identities_before: int = 0
    identities: int = 0
    merges: int = 0
    swaps: int = 0
    appearance: bool = False  # the video's re-ID vectors were calibrated for linking
    forced: int = 0
    untracked: int = 0


def _gate_boxes(box: np.ndarray, single: np.ndarray, floor: float | None) -> np.ndarray:
    """Raw boxes with sleap-nn's degenerate rule: a single-node pose, or under 1 px on
    an axis, becomes a square of side ``floor`` (the body size) or, with ``floor`` None, the
    extent floored at 1 px per axis, around the same centre."""
    out = np.asarray(box, np.float64).copy()
    wh = out[:, 2:] - out[:, :2]
    valid = np.isfinite(out).all(axis=1)
    bad = valid & (single | (wh < 1.0).any(axis=1))
    if bad.any():
        c = 0.5 * (out[bad, :2] + out[bad, 2:])
        half = (
            np.full_like(c, 0.5 * max(float(floor), 1.0))
            if floor is not None
            else 0.5 * np.maximum(wh[bad], 1.0)
        )
        out[bad] = np.concatenate([c - half, c + half], axis=1)
    return out


def _padded(raw: np.ndarray, boxes: np.ndarray, single: np.ndarray) -> np.ndarray:
    """sleap-nn's padded boxes: ``box_padding`` of the longer side on each side; a
    degenerate detection's is its (body-size) square, unpadded."""
    raw = np.asarray(raw, np.float64)
    wh = raw[:, 2:] - raw[:, :2]
    out = raw + (BOX_PADDING * wh.max(axis=1))[:, None] * np.array([-1.0, -1.0, 1.0, 1.0])
    valid = np.isfinite(raw).all(axis=1)
    bad = valid & (single | (wh < 1.0).any(axis=1))
    out[bad] = boxes[bad]
    return out


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of ``xyxy`` boxes ``(..., n, 4)`` and ``(..., m, 4)``: ``(..., n, m)``; a box
    with a non-finite coordinate scores 0."""
    a = np.where(np.isfinite(a).all(axis=-1)[..., None], a, 0.0)
    b = np.where(np.isfinite(b).all(axis=-1)[..., None], b, 0.0)
    area_a = np.clip(a[..., 2] - a[..., 0], 0, None) * np.clip(a[..., 3] - a[..., 1], 0, None)
    area_b = np.clip(b[..., 2] - b[..., 0], 0, None) * np.clip(b[..., 3] - b[..., 1], 0, None)
    iw = np.minimum(a[..., :, None, 2], b[..., None, :, 2])
    iw = iw - np.maximum(a[..., :, None, 0], b[..., None, :, 0])
    ih = np.minimum(a[..., :, None, 3], b[..., None, :, 3])
    ih = ih - np.maximum(a[..., :, None, 1], b[..., None, :, 1])
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    union = area_a[..., :, None] + area_b[..., None, :] - inter
    out = np.zeros(inter.shape)
    np.divide(inter, union, out=out, where=union > 0)
    return np.clip(out, 0.0, 1.0)


def _gating(pos, track, padded, score, n_visible, has, valid, n_nodes, high):
    """Per tracked detection: whether its vector may enter a gallery (confident, half
    its nodes visible, isolated: padded-box IoU < 0.1 with every other detection of the
    frame); and the same-frame pairs of tracked detections of different tracks whose
    padded boxes overlap (ambiguity), as indices among the tracked detections, in frame
    order (frames of equal size at once: :mod:`~sleap_infer.tracking.common.frame_blocks`)."""
    tracked = track >= 0
    offsets, counts = frame_layout(pos)
    isolated = np.ones(len(pos), bool)
    parts = []
    for rows in frame_blocks(offsets, counts, min_count=2):
        iou = iou_matrix(padded[rows], padded[rows])
        eye = np.eye(rows.shape[1], dtype=bool)
        isolated[rows] = (np.where(eye, 0.0, iou) < ISOLATION_IOU).all(axis=-1)
        t, ids = tracked[rows], track[rows]
        overlap = (iou >= AMBIGUITY_IOU) & t[:, :, None] & t[:, None, :]
        parts.append(upper_pairs(overlap & (ids[:, :, None] != ids[:, None, :]), rows))
    visible = n_visible / n_nodes >= MIN_VISIBLE_FRACTION
    ok = valid & (score >= high) & visible & isolated & has
    among_tracked = np.cumsum(tracked) - 1  # a tracked detection's index among them
    overlaps = among_tracked[in_frame_order(parts)]
    return ok[tracked], overlaps.reshape(-1, 2).astype(np.int64)


def link_tracks(
    inp: LinkInput,
    max_tracks: int | None = None,
    track_buffer: int = TRACK_BUFFER,
    body_size: float | None = None,
    high_threshold: float = HIGH_THRESHOLD,
    normalize_scores: bool = False,
) -> tuple[np.ndarray, LinkResult]:
    """New track id of each detection of ``inp`` (-1: untracked), and the counts.

    ``high_threshold``: a gated vector's minimum detection score (sleap-nn's
    ``track_high_threshold``: 0.5 after the classic tracker, the MOT tracker's own).
    ``normalize_scores``: scores are divided by the video's 95th percentile score and
    clipped to [0, 1] first (sleap-nn's MOT trackers, ``animal`` preset).
    """
    frame_idx, pos, track, box, score, n_visible = inp.arrays()
    result = LinkResult()
    if not (track >= 0).any():
        return track.copy(), result
    single, sized = inp.single_and_sized(n_visible)
    valid = np.isfinite(box).all(axis=1)
    floored = _gate_boxes(box, single, None)
    geo = calibrate_geometry(
        frame_idx,
        pos[valid].astype(np.int64),
        0.5 * (floored[valid, :2] + floored[valid, 2:]),
        floored[valid],
        sized[valid],
        body_size,
    )
    if normalize_scores:
        finite = score[valid][np.isfinite(score[valid])]
        if finite.size:
            q95 = float(np.quantile(finite, (0.05, 0.25, 0.5, 0.75, 0.95))[-1])
            if np.isfinite(q95):
                score = np.clip(score / max(q95, 1e-6), 0.0, 1.0)
    vectors, has = inp.vectors(pos)
    steps = frame_steps(frame_idx, geo.time_base, geo.frame_step)
    rules = None
    if vectors is not None:
        unit, unit_has = unit_rows(vectors[valid], has[valid])
        rules = link_rules(
            unit, unit_has, geo.anchor_of, geo.n_anchors, steps[pos[valid]], track_buffer,
            int(steps[-1]),
        )  # fmt: skip
    wh = floored[:, 2:] - floored[:, :2]
    degenerate = valid & (single | (wh <= 1.0 + 1e-9).any(axis=1))
    boxes = _gate_boxes(box, single, geo.body_size) if degenerate.any() else floored
    padded = _padded(box, boxes, single)
    gated, overlaps = _gating(
        pos, track, padded, score, n_visible, has, valid, max(inp.n_nodes, 1), high_threshold
    )
    linker = Linker(frame_idx, pos, track, boxes, score, sized, geo, track_buffer)
    linker.add_appearance(gated, vectors, overlaps, rules)
    result.identities_before = len(linker.names)
    appearance = rules is not None and bool(np.isfinite(linker.thresh_n).any())
    appearance = appearance and linker.vectors is not None
    result.appearance = appearance
    if appearance:
        result.swaps = correct_swaps(linker)
    linker.init_linking(appearance)
    while (best := linker.best_gap_link()) is not None:
        linker.merge(*best)
        result.merges += 1
    if max_tracks is not None and max_tracks >= 1 and linker.alive.sum() > max_tracks:
        result.forced, result.untracked = ClosedSet(linker).run(int(max_tracks))
    final = linker.final_tracks()
    out = track.copy()
    tracked = np.flatnonzero(track >= 0)
    lab = linker.label
    ids = np.array([linker.ids[final[k]] if k >= 0 and k in final else -1 for k in lab.tolist()])
    out[tracked] = ids.astype(np.int32)
    result.identities = len(final)
    return out, result
