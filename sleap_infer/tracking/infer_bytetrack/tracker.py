"""infer's own ByteTrack variant (``--tracker infer_bytetrack``; Zhang et al. 2022).

Kalman box motion, then association in two stages by score. sleap-nn's ByteTrack is
``--tracker bytetrack`` (:mod:`~sleap_infer.tracking.mot.bytetrack`); this variant took the
name ``bytetrack`` until infer ported sleap-nn's, and keeps its place because it
tracks our crowded and stop-and-go scenes better (docs/tracking-accuracy.md).

Written here rather than taken from a library: filterpy is unmaintained,
supervision and trackers keep their tracks in Python objects with no exact
save and restore, and boxmot is AGPL. This tracker's whole memory is a few
arrays and a few numbers, which ``--resume`` saves and restores bit for bit.

Per frame, every detection gets a box (the padded extent of its visible
keypoints, or of its mask's pixels; no visible point or an empty mask: no box,
never tracked) and a score relative to the video's typical one (see
:meth:`ByteTracker._normalized`). A pose whose visible keypoints collapse to a
point (one-node skeletons, centroid-only models, all but one node hidden) has
no extent to pad, so it gets sleap-nn's pseudo box instead: a square of the
running body size (:class:`~sleap_infer.tracking.common.body_size.RunningBodySize`:
the median pose diagonal so far or, with no extent ever seen, the link lengths
and spacing of the frames so far), taken from the frames before this one.
Every live track is moved by its Kalman filter
(:mod:`~sleap_infer.tracking.common.kalman`). A track and a detection overlap
by the IoU of the predicted and detected boxes or, for poses, by
:func:`shared_node_iou` if larger. Then:

1. **Stage 1**: tracked and lost tracks vs the high-score detections (score at
   or above ``track_high_threshold``), Hungarian on ``1 - IoU * score``; a pair
   must reach ``match_iou_threshold`` of that product. A lost track that matches
   is found again, with its old id.
2. **Stage 2**: the tracks still unmatched that were seen at the previous frame
   vs the low-score detections (``track_low_threshold`` up to the high one), on
   IoU alone, at least :data:`LOW_STAGE_MIN_IOU`. This keeps an occluded animal,
   whose detection score drops, on its track; a low-score detection never starts
   a track. Tracks unmatched now are lost.
3. **Stage 3**: unconfirmed tracks vs the high-score detections left, as stage 1
   but at least :data:`UNCONFIRMED_MIN_IOU`. A match confirms the track and only
   then gives it the next id, so ids stay dense and a one-frame false positive
   never takes one; the track's first detection gets the id too, as a late
   label (score 1.0, sleap-nn's spawn score), since its frame was already
   answered. An unconfirmed track that misses is dropped.
4. High-score detections left at or above ``new_track_threshold`` start
   unconfirmed tracks. A lost track can take a detection until it has been
   unseen for more than ``track_buffer`` frames.

``max_tracks`` is no cap here: as in sleap-nn 0.3.5 (``MOTParams.link``) a known
animal count makes identity linking close the set at the end of the video
(:mod:`sleap_infer.pipeline.linked`), once every track is known. Nothing is
ever dropped: every detection comes back, with ``-1`` when untracked. The
tracking score is the match's overlap (IoU).

Facts shared with sleap-nn 0.3.5's ``bytetrack`` "animal" preset: a ``xywh``
filter, boxes padded by a tenth of their longer side, scores relative to the
video's 95th percentile, the shared-node IoU, score-fused stages 1 and 3, the
published score thresholds, the retroactive label of a track's first detection.
It differs in its online score scale (without ``infer track``'s whole-video
pre-pass, the percentile and the body size are of the frames seen so far;
sleap-nn's class leaves scores as they are), in matching one-node poses by the
IoU of their pseudo boxes where sleap-nn's ``auto`` similarity takes centroid
proximity, in filling an occluded pose's hidden nodes from its track before the
Kalman update, and in omitting the tracked-vs-lost duplicate removal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import sleap_infer.tracking.common.kalman as kalman
from sleap_infer.ops.assignment import linear_sum_assignment
from sleap_infer.tracking.base import (
    MASKS,
    Assignment,
    Detections,
    LateLabel,
    MaskBitmap,
    TrackerState,
)
from sleap_infer.tracking.common import boxes as mb
from sleap_infer.tracking.common.body_size import RunningBodySize
from sleap_infer.tracking.common.prepare import MotCalibration, normalized
from sleap_infer.tracking.options import TrackingOptions

BOX_PADDING = 0.1  # added to each side of a box, as a fraction of its longer side
MIN_SIDE_FRACTION = 0.25  # a padded box's short side is at least this of its long side
LOW_STAGE_MIN_IOU = 0.5  # stage 2 (low-score detections): ByteTrack's 0.5 cost cap
UNCONFIRMED_MIN_IOU = 0.3  # stage 3 (unconfirmed tracks): ByteTrack's 0.7 cost cap
SCORE_BINS = 1000  # of the score histogram the 95th percentile comes from
_NO_MATCH = 1e6  # Hungarian cost of a pair that may not match

TRACKED, LOST, UNCONFIRMED = 0, 1, 2  # track status codes (saved in the state)
STATE_FORMAT = 3  # 2: the running body size (format 1: none seen yet); 3: births
BORN_ARRAYS = ("born_frame", "born_det")  # format 3: an unconfirmed track's first detection
BODY_ARRAYS = ("diagonals", "spacings", "step_lengths")  # saved by RunningBodySize
PREV_ARRAYS = ("prev_centroids", "prev_extents")  # ... while it keeps a previous frame

Pairs = list[tuple[int, int]]  # (track row, detection index)


def pose_boxes(points: np.ndarray) -> np.ndarray:
    """``(I, 4)`` ``[x0, y0, x1, y1]`` extents of the visible keypoints; NaN rows: none visible."""
    pts = np.asarray(points, dtype=np.float64)
    out = np.full((pts.shape[0], 4), np.nan)
    if pts.shape[0] == 0 or pts.shape[1] == 0:
        return out
    nodes = np.ascontiguousarray(pts.transpose(1, 0, 2))  # (N, I, 2): reduce whole planes
    visible = np.all(np.isfinite(nodes), axis=-1)[..., None]
    lo = np.where(visible, nodes, np.inf).min(axis=0)
    hi = np.where(visible, nodes, -np.inf).max(axis=0)
    seen = visible[..., 0].any(axis=0)
    out[seen] = np.concatenate([lo, hi], axis=1)[seen]
    return out


def mask_boxes(masks: list[MaskBitmap]) -> np.ndarray:
    """``(I, 4)`` frame-pixel extents of the masks' set pixels; NaN rows: empty masks.

    Bitmap pixel ``c`` covers ``[c, c + 1)``, i.e. frame ``offset + [c, c + 1) / scale``.
    """
    out = np.full((len(masks), 4), np.nan)
    for i, mask in enumerate(masks):
        bitmap = np.asarray(mask.bitmap, dtype=bool)
        rows, cols = np.flatnonzero(bitmap.any(axis=1)), np.flatnonzero(bitmap.any(axis=0))
        if rows.size == 0:
            continue
        (sx, sy), (ox, oy) = mask.scale, mask.offset
        out[i] = (
            ox + cols[0] / sx,
            oy + rows[0] / sy,
            ox + (cols[-1] + 1) / sx,
            oy + (rows[-1] + 1) / sy,
        )
    return out


def padded(boxes: np.ndarray) -> np.ndarray:
    """Boxes grown by :data:`BOX_PADDING`, short side floored at :data:`MIN_SIDE_FRACTION`.

    A keypoint box is tight around the nodes and a thin animal's is nearly a
    line, whose IoU collapses at a pixel of motion; padding and the floor give
    every box some body. (Column by column: a reduction over each box's two
    sides, as rows, cost more than the arithmetic; ``np.maximum`` of the two
    columns gives the row maximum's bits, NaN included.)
    """
    x0, y0, x1, y1 = boxes.T
    pad = BOX_PADDING * np.maximum(x1 - x0, y1 - y0)
    x0, y0, x1, y1 = x0 - pad, y0 - pad, x1 + pad, y1 + pad
    w, h = x1 - x0, y1 - y0
    floor = MIN_SIDE_FRACTION * np.maximum(w, h)
    gx, gy = 0.5 * np.maximum(floor - w, 0), 0.5 * np.maximum(floor - h, 0)
    return np.stack([x0 - gx, y0 - gy, x1 + gx, y1 + gy], axis=1)


def degenerate(raw: np.ndarray) -> np.ndarray:
    """Rows of ``raw`` extents that collapse to a point (under :data:`mot_boxes.MIN_SIDE
    <sleap_infer.tracking.common.boxes.MIN_SIDE>` on both sides): one visible node, or all in one
    spot. Padding a fraction of nothing leaves nothing, so they take a pseudo box."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(raw).all(axis=1) & ((raw[:, 2:] - raw[:, :2]) < mb.MIN_SIDE).all(axis=1)


def body_boxes(raw: np.ndarray, body: float) -> np.ndarray:
    """Squares of side ``body`` on the centres of ``raw`` (sleap-nn's degenerate pseudo box)."""
    half = 0.5 * max(body, mb.MIN_SIDE)
    centre = 0.5 * (raw[:, :2] + raw[:, 2:])
    return np.concatenate([centre - half, centre + half], axis=1)


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(len(a), len(b))`` IoU of ``xyxy`` boxes; 0 wherever a box is NaN."""
    (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = a.T[:, :, None], b.T[:, None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.clip(np.minimum(ax1, bx1) - np.maximum(ax0, bx0), 0.0, None)
        h = np.clip(np.minimum(ay1, by1) - np.maximum(ay0, by0), 0.0, None)
        inter = w * h
        area_a = (ax1 - ax0) * (ay1 - ay0)
        area_b = (bx1 - bx0) * (by1 - by0)
        iou = inter / (area_a + area_b - inter)
    return finite_or_zero(iou)


def match(
    sim: np.ndarray, rows: np.ndarray, cols: np.ndarray, min_sim: float, weight: np.ndarray | None
) -> tuple[Pairs, np.ndarray, np.ndarray]:
    """Hungarian matching of ``rows`` to ``cols`` on ``1 - sim * weight``.

    A pair is a match only if ``sim * weight`` reaches ``min_sim`` and ``sim``
    is positive (boxes that do not touch never match). Returns the pairs and
    the rows and columns left, each in their given order.
    """
    if rows.size == 0 or cols.size == 0:
        return [], rows, cols
    gain = sim[np.ix_(rows, cols)]
    if weight is not None:
        gain = gain * weight[cols][None, :]
    allowed = (gain >= min_sim) & (sim[np.ix_(rows, cols)] > 0)
    r, c = linear_sum_assignment(np.where(allowed, 1.0 - gain, _NO_MATCH))
    ok = allowed[r, c]
    pairs = [(int(rows[i]), int(cols[j])) for i, j in zip(r[ok], c[ok])]
    left_rows, left_cols = np.ones(rows.size, bool), np.ones(cols.size, bool)
    left_rows[r[ok]], left_cols[c[ok]] = False, False
    return pairs, rows[left_rows], cols[left_cols]


def shared_node_iou(track_poses: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``(T, I)`` IoU of padded boxes around the nodes visible in *both* poses of a pair.

    Occlusion hides nodes, so a detection's box shrinks exactly when its track
    most needs matching, while the track's box keeps the whole body; comparing
    only the nodes both sides have compares like with like. 0 where fewer than
    two nodes are shared.
    """
    out = np.zeros((len(track_poses), len(points)))
    if out.size == 0:
        return out
    count, lo_t, hi_t, lo_d, hi_d = mb.shared_extents(track_poses, points)
    pair = count >= 2
    if not pair.any():
        return out
    a = padded(np.concatenate([lo_t[pair], hi_t[pair]], axis=1))
    b = padded(np.concatenate([lo_d[pair], hi_d[pair]], axis=1))
    ow = np.clip(np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
    oh = np.clip(np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0, None)
    inter = ow * oh
    union = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union -= inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out[pair] = np.nan_to_num(inter / union, nan=0.0, posinf=0.0)
    return out


def finite_or_zero(values: np.ndarray) -> np.ndarray:
    """``np.nan_to_num(values, nan=0, posinf=0, neginf=0)`` in one pass."""
    return np.where(np.isfinite(values), values, 0.0)


class ByteTracker:
    """ByteTrack over pose or mask boxes; see the module docstring for the rules."""

    needs_images = False

    def __init__(self, options: TrackingOptions, carrier: str) -> None:
        self.options = options.with_tracker_defaults()  # its unset thresholds: ByteTrack's
        self.carrier = carrier
        self._frame: int | None = None  # the last frame stepped
        self._next_id = 0
        self._histogram = np.zeros(SCORE_BINS, dtype=np.int64)  # of clipped scores
        self.calibration: MotCalibration | None = None  # the whole-video pre-pass, if run
        self._body = RunningBodySize()  # the pseudo box of degenerate poses
        self._body_size = self._body.size()  # this frame's: from the frames before it
        # One row per live track, in order of creation; exactly the saved state.
        self._tracks: dict[str, np.ndarray] = {
            "ids": np.zeros(0, dtype=np.int64),  # -1 while unconfirmed
            "status": np.zeros(0, dtype=np.int64),
            "last": np.zeros(0, dtype=np.int64),  # frame of the last match
            "mean": np.zeros((0, 8)),  # Kalman state
            "cov": np.zeros((0, 8, 8)),
            "pose": np.zeros((0, 0, 2)),  # keypoints at the last match (poses only)
            "anchor": np.zeros((0, 2)),  # Kalman centre at the last match
            "born_frame": np.zeros(0, dtype=np.int64),  # frame of the first detection
            "born_det": np.zeros(0, dtype=np.int64),  # ... its index there (-1: unknown)
        }

    @property
    def n_tracks(self) -> int:
        return self._next_id

    def prepare(self, calibration: MotCalibration | None) -> None:
        """Take the whole-video pre-pass (``infer track``): scores are divided by the
        video's 95th-percentile score, as sleap-nn's ``prepare()`` does, not the running one."""
        self.calibration = calibration

    def _normalized(self, score: np.ndarray) -> np.ndarray:
        """Scores over the 95th percentile of every score seen so far, clipped to [0, 1].

        A pose model's mean point confidence sits well below a pedestrian
        detector's and its scale depends on the model, so ByteTrack's thresholds
        only mean the same on every model once scores are relative to the
        video's typical detection (sleap-nn's animal preset divides by the
        whole video's; online, the video so far). The percentile comes from a
        histogram, which is part of the state.
        """
        clipped = np.clip(np.nan_to_num(score), 0.0, 1.0)
        if self.calibration is not None:
            return normalized(clipped, self.calibration.score_normalizer)
        bins = np.minimum((clipped * SCORE_BINS).astype(np.int64), SCORE_BINS - 1)
        self._histogram += np.bincount(bins, minlength=SCORE_BINS)
        cumulative = np.cumsum(self._histogram)
        q95 = (np.searchsorted(cumulative, 0.95 * cumulative[-1]) + 1) / SCORE_BINS
        return np.clip(clipped / max(q95, 1.0 / SCORE_BINS), 0.0, 1.0)

    def boxes(self, detections: Detections) -> np.ndarray:
        """The padded ``(I, 4)`` box of every detection (NaN: no box)."""
        if self.carrier == MASKS and detections.masks is not None:
            return padded(mask_boxes(detections.masks))
        return self._pose_padded(pose_boxes(detections.points))

    def _pose_padded(self, raw: np.ndarray) -> np.ndarray:
        """Padded pose boxes; a :func:`degenerate` one is a square of the body size."""
        out = padded(raw)
        point = degenerate(raw)
        if point.any():
            out[point] = body_boxes(raw[point], self._body_size)
        return out

    def _observe_body(self, detections: Detections, points: np.ndarray, gap: int | None) -> None:
        """Add this frame's body-size evidence (poses only: a mask always has an extent)."""
        if self.carrier == MASKS and detections.masks is not None:
            return
        raw = pose_boxes(points)
        valid = np.isfinite(raw).all(axis=1)
        steps = 0 if gap is None else max(gap, 0)
        linkable = gap is None or gap > 0
        self._body.observe(mb.pose_diagonals(detections), (points, raw, valid), steps, linkable)

    def similarity(self, points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        """``(T, I)`` overlap of every live track's prediction with every detection.

        Poses take the larger of the Kalman-box IoU and :func:`shared_node_iou`
        of the track's last pose, moved as its Kalman centre moved since.
        """
        t = self._tracks
        iou = iou_matrix(kalman.xyxy_from_mean(t["mean"]), boxes)
        if self.carrier == MASKS or iou.size == 0 or t["pose"].shape[1] != points.shape[1]:
            return iou
        moved = t["pose"] + (t["mean"][:, :2] - t["anchor"])[:, None, :]
        return np.fmax(iou, shared_node_iou(moved, points))

    def step(self, detections: Detections) -> Assignment:
        n = len(detections)
        track_ids = np.full(n, -1, dtype=np.int64)
        match_scores = np.full(n, np.nan, dtype=np.float32)
        points = np.asarray(detections.points, dtype=np.float64)
        self._body_size = self._body.size()
        boxes = self.boxes(detections)
        gap = None if self._frame is None else int(detections.frame_idx) - self._frame
        self._advance(int(detections.frame_idx))
        self._observe_body(detections, points, gap)
        score = self._normalized(np.asarray(detections.scores, dtype=np.float64).reshape(n))
        has_box = np.isfinite(boxes).all(axis=1)
        high = has_box & (score >= self.options.track_high_threshold)
        low = has_box & ~high & (score >= self.options.track_low_threshold)
        sim = self.similarity(points, boxes)

        matched, confirming, left_high = self._associate(sim, score, high, low)
        ids, status = self._tracks["ids"], self._tracks["status"]
        keep = np.ones(len(ids), dtype=bool)
        late: list[LateLabel] = []
        born_frame, born_det = self._tracks["born_frame"], self._tracks["born_det"]
        for row, det in confirming:
            ids[row] = self._next_id
            self._next_id += 1
            matched.append((row, det))
            if born_det[row] >= 0:
                late.append((int(born_frame[row]), int(born_det[row]), int(ids[row]), 1.0))
        seen = np.zeros(len(ids), dtype=bool)
        seen[[row for row, _ in matched]] = True
        keep &= seen | (status != UNCONFIRMED)  # an unconfirmed track that missed
        status[~seen & (status == TRACKED)] = LOST
        self._update(matched, boxes, points)
        for row, det in matched:
            track_ids[det] = ids[row]
            match_scores[det] = sim[row, det]
        self._drop(keep)
        spawn = np.sort(left_high[score[left_high] >= self.options.new_track_threshold])
        self._spawn(boxes[spawn], points[spawn], spawn)
        return Assignment(track_ids=track_ids, scores=match_scores, late=late)

    def _advance(self, frame: int) -> None:
        """Forget tracks unseen for too long, then move the rest to ``frame``."""
        gap = 1 if self._frame is None else max(frame - self._frame, 1)
        self._frame = frame
        buffer = self.options.track_buffer
        assert buffer is not None  # with_tracker_defaults filled it
        self._drop(frame - self._tracks["last"] <= buffer + 1)
        t = self._tracks
        for _ in range(gap if len(t["ids"]) else 0):
            t["mean"], t["cov"] = kalman.predict(t["mean"], t["cov"], t["status"] == LOST)

    def _associate(
        self, sim: np.ndarray, score: np.ndarray, high: np.ndarray, low: np.ndarray
    ) -> tuple[Pairs, Pairs, np.ndarray]:
        """The three stages: (stage 1 + 2 matches, stage 3 matches, high detections left)."""
        status = self._tracks["status"]
        pool, lows = np.flatnonzero(status != UNCONFIRMED), np.flatnonzero(low)
        first, left, left_high = match(
            sim, pool, np.flatnonzero(high), self.options.match_iou_threshold, score
        )
        second, _, _ = match(sim, left[status[left] == TRACKED], lows, LOW_STAGE_MIN_IOU, None)
        third, _, left_high = match(
            sim, np.flatnonzero(status == UNCONFIRMED), left_high, UNCONFIRMED_MIN_IOU, score
        )
        return first + second, third, left_high

    def _update(self, matched: Pairs, boxes: np.ndarray, points: np.ndarray) -> None:
        """Kalman-correct the matched tracks with their detections' boxes.

        A pose's hidden nodes are first filled from its track's moved last pose,
        so an occluded animal's box keeps its whole body instead of shrinking to
        the nodes still visible (which the filter would take for motion).
        """
        if not matched:
            return
        t = self._tracks
        rows = np.array([row for row, _ in matched], dtype=np.int64)
        dets = np.array([det for _, det in matched], dtype=np.int64)
        measured = boxes[dets]
        if t["pose"].shape[1] == points.shape[1] and points.shape[1] > 0:
            moved = t["pose"][rows] + (t["mean"][rows, :2] - t["anchor"][rows])[:, None, :]
            pose = np.where(np.isfinite(points[dets]), points[dets], moved)
            measured = self._pose_padded(pose_boxes(pose))
            t["pose"][rows] = pose
        mean, cov = kalman.update(t["mean"][rows], t["cov"][rows], kalman.xywh_from_xyxy(measured))
        t["mean"][rows], t["cov"][rows], t["anchor"][rows] = mean, cov, mean[:, :2]
        t["status"][rows] = TRACKED
        t["last"][rows] = self._frame

    def _drop(self, keep: np.ndarray) -> None:
        if not keep.all():
            self._tracks = {name: values[keep] for name, values in self._tracks.items()}

    def _spawn(self, boxes: np.ndarray, points: np.ndarray, dets: np.ndarray) -> None:
        """Unconfirmed tracks from detections ``dets`` (no id until their next match)."""
        n = len(boxes)
        if n == 0:
            return
        t = self._tracks
        if len(t["ids"]) == 0:  # the skeleton's size comes with the first poses
            t["pose"] = np.zeros((0, *points.shape[1:]))
        mean, cov = kalman.initiate(kalman.xywh_from_xyxy(boxes))
        unknown = np.full((n, *t["pose"].shape[1:]), np.nan)  # a skeleton of another size
        new = {
            "ids": np.full(n, -1, dtype=np.int64),
            "status": np.full(n, UNCONFIRMED, dtype=np.int64),
            "last": np.full(n, self._frame, dtype=np.int64),
            "mean": mean,
            "cov": cov,
            "pose": points if t["pose"].shape[1:] == points.shape[1:] else unknown,
            "anchor": mean[:, :2].copy(),
            "born_frame": np.full(n, self._frame, dtype=np.int64),
            "born_det": np.asarray(dets, dtype=np.int64),
        }
        self._tracks = {name: np.concatenate([t[name], new[name]]) for name in t}

    def state(self) -> TrackerState:
        meta: dict[str, Any] = {
            "tracker": "infer_bytetrack",
            "format": STATE_FORMAT,
            "frame": self._frame,
            "next_id": self._next_id,
            "has_prev_geometry": self._body.prev_geometry is not None,
        }
        arrays = {name: values.copy() for name, values in self._tracks.items()}
        arrays["score_histogram"] = self._histogram.copy()
        arrays |= self._body.arrays()
        return TrackerState(meta=meta, arrays=arrays)

    def load_state(self, state: TrackerState) -> None:
        meta, arrays = state.meta, state.arrays
        if meta.get("tracker") != "infer_bytetrack" or meta.get("format") != STATE_FORMAT:
            raise ValueError(f"not an infer_bytetrack state (format {STATE_FORMAT}): {meta}")
        has_prev = bool(meta["has_prev_geometry"])
        want = {*self._tracks, "score_histogram", *BODY_ARRAYS, *(PREV_ARRAYS if has_prev else ())}
        if set(arrays) != want:
            raise ValueError(f"bytetrack state arrays {sorted(arrays)}: want {sorted(want)}")
        self._frame = None if meta["frame"] is None else int(meta["frame"])
        self._next_id = int(meta["next_id"])
        self._histogram = np.array(arrays["score_histogram"], dtype=np.int64)
        self._body = RunningBodySize()
        self._body.load(arrays, has_prev)
        self._tracks = {
            name: np.array(arrays[name], dtype=template.dtype)
            for name, template in self._tracks.items()
        }
