"""Boxes, similarities and the SORT Kalman filter of sleap-nn 0.3.5's MOT trackers.

The SORT family (``sort``, ``ocsort``, ...) sees each detection as a padded box
and moves each track's box with a Kalman filter. These are the geometric facts
those trackers share, written to give the same numbers as sleap-nn's
``sleap_nn.tracking.mot`` (``detections.py``, ``association.py``,
``kalman.py``) so our tracks match theirs on the same detections:

* a pose's raw box is the extent of its visible nodes, a mask's the extent of
  its pixels (one pixel wide per pixel, in frame coordinates);
* the padded box adds ``box_padding`` of the longer side to every side; a pose
  with one visible node, or a box under 1 px on a side, is *degenerate* and
  gets a square of the current body size instead;
* a padded box narrower than a quarter of the body size is widened to it, so a
  thin (nearly collinear) pose keeps a usable IoU.

Kept apart from :mod:`~sleap_infer.tracking.common.kalman` (ByteTrack's ``xywh``
filter) because SORT's filter has another state (``[cx, cy, area, ratio]``) and
fixed noise. Every function is pure: a tracker's arrays *are* its state.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrf, dpotrs

from sleap_infer.ops.assignment import linear_sum_assignment
from sleap_infer.tracking.base import MASKS, Detections

MIN_SIDE = 1.0  # px: boxes narrower than this are degenerate; Kalman sides floor here
MIN_BOX_FRACTION = 0.25  # padded boxes are at least this of the body size per axis
DEFAULT_BODY_SIZE = 50.0  # px, until a two-node pose has been seen
MIN_RATIO = 1e-6  # smallest aspect ratio read back from an xysr state
ASSIGN_EPS = 1e-5  # a forbidden pair costs the cap plus this (DeepSORT's rule)


def raw_boxes(det: Detections, carrier: str) -> tuple[np.ndarray, np.ndarray]:
    """``(I, 4)`` unpadded ``xyxy`` extents (NaN: nothing visible) and ``(I,)`` visible counts."""
    n = len(det)
    raw = np.full((n, 4), np.nan)
    count = np.zeros(n, np.int64)
    if carrier == MASKS:
        for i, mask in enumerate(det.masks or []):
            rows, cols = np.any(mask.bitmap, axis=1), np.any(mask.bitmap, axis=0)
            if not rows.any():
                continue
            r0, r1 = np.flatnonzero(rows)[[0, -1]]
            c0, c1 = np.flatnonzero(cols)[[0, -1]]
            (sx, sy), (ox, oy) = mask.scale, mask.offset
            x, y = float(c0 / sx + ox), float(r0 / sy + oy)
            raw[i] = (x, y, x + float((c1 - c0 + 1) / sx), y + float((r1 - r0 + 1) / sy))
            count[i] = 1
        return raw, count
    pts = np.asarray(det.points, np.float64)
    if n == 0 or pts.shape[1] == 0:
        return raw, count
    visible = np.all(np.isfinite(pts), axis=-1)
    count = visible.sum(axis=1).astype(np.int64)
    lo = np.where(visible[..., None], pts, np.inf).min(axis=1)
    hi = np.where(visible[..., None], pts, -np.inf).max(axis=1)
    raw = np.concatenate([lo, hi], axis=1)
    raw[count == 0] = np.nan
    return raw, count


def padded_boxes(
    raw: np.ndarray, count: np.ndarray, carrier: str, padding: float, body: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(boxes, raw)``: padded boxes, and raw ones with degenerate rows made square."""
    raw = raw.copy()
    valid = np.isfinite(raw).all(axis=1)
    wh = raw[:, 2:] - raw[:, :2]
    centre = 0.5 * (raw[:, :2] + raw[:, 2:])
    pad = padding * wh.max(axis=1, initial=-np.inf) if len(raw) else np.zeros(0)
    boxes = raw + pad[:, None] * np.array([-1.0, -1.0, 1.0, 1.0])
    single = (count == 1) if carrier != MASKS else np.zeros(len(raw), bool)
    degenerate = valid & (single | (wh < MIN_SIDE).any(axis=1))
    if degenerate.any():
        half = 0.5 * max(body, MIN_SIDE)
        c = centre[degenerate]
        raw[degenerate] = np.concatenate([c - half, c + half], axis=1)
        boxes[degenerate] = raw[degenerate]
    side = boxes[:, 2:] - boxes[:, :2]
    grow = 0.5 * np.maximum(MIN_BOX_FRACTION * body - side, 0.0)
    grow[~valid] = 0.0
    return boxes + np.concatenate([-grow, grow], axis=1), raw


def pose_diagonals(det: Detections) -> np.ndarray:
    """Diagonals of the extents of poses with two or more visible nodes (body-size evidence)."""
    raw, count = raw_boxes(det, "poses")
    wh = (raw[:, 2:] - raw[:, :2])[count >= 2]
    keep = np.isfinite(wh).all(axis=1) & (wh >= 1.0).all(axis=1)
    return np.hypot(wh[keep, 0], wh[keep, 1])


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(n, m)`` IoU of ``xyxy`` boxes; a box with a NaN scores 0."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    ok_a, ok_b = np.all(np.isfinite(a), axis=1), np.all(np.isfinite(b), axis=1)
    a, b = np.where(ok_a[:, None], a, 0.0), np.where(ok_b[:, None], b, 0.0)
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    iw = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    ih = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.where(ok_a[:, None] & ok_b[None], np.clip(iw, 0, None) * np.clip(ih, 0, None), 0)
    union = area_a[:, None] + area_b[None, :] - inter
    out = np.zeros(inter.shape)
    np.divide(inter, union, out=out, where=union > 0)
    return np.clip(out, 0.0, 1.0)


def centroid_similarity(a: np.ndarray, b: np.ndarray, scale: float) -> np.ndarray:
    """Gaussian ``exp(-d^2 / 2 scale^2)`` of ``(n, 2)`` vs ``(m, 2)`` points; NaN scores 0."""
    d2 = ((np.asarray(a)[:, None] - np.asarray(b)[None]) ** 2).sum(axis=-1)
    ok = np.isfinite(d2)
    return np.where(ok, np.exp(-np.where(ok, d2, 0.0) / (2.0 * scale**2)), 0.0)


def assign_capped(cost: np.ndarray, max_cost: float) -> list[tuple[int, int]]:
    """Minimum-cost pairs with every pair above ``max_cost`` forbidden (rows ascending).

    A forbidden pair is priced just above the cap, so leaving a track and a
    detection unmatched costs about the cap and the solver never breaks a good
    match to make two poor ones.
    """
    if cost.size == 0:
        return []
    feasible = np.isfinite(cost) & (cost <= max_cost)
    if not feasible.any():
        return []
    rows, cols = linear_sum_assignment(np.where(feasible, cost, max_cost + ASSIGN_EPS))
    return [(int(r), int(c)) for r, c in zip(rows, cols) if feasible[r, c]]


def one_to_one(valid: np.ndarray) -> list[tuple[int, int]] | None:
    """The admissible pairs if each row and column has at most one, else None (SORT)."""
    if valid.size == 0 or not valid.any():
        return None
    if valid.sum(axis=1).max() > 1 or valid.sum(axis=0).max() > 1:
        return None
    return [(int(r), int(c)) for r, c in np.argwhere(valid)]


# ------------------------------------------------------------ SORT's xysr filter
# State [cx, cy, s, r, vx, vy, vs] (s: area, r: aspect ratio); measurement [cx, cy, s, r].
XYSR_DIM = 7
_P0 = np.array([10.0, 10.0, 10.0, 10.0, 1e4, 1e4, 1e4])
_Q = np.array([1.0, 1.0, 1.0, 1.0, 1e-2, 1e-2, 1e-4])
_R = np.array([1.0, 1.0, 10.0, 10.0])
_MOTION = np.eye(XYSR_DIM)
_MOTION[0, 4] = _MOTION[1, 5] = _MOTION[2, 6] = 1.0


def xysr_from_xyxy(box: np.ndarray) -> np.ndarray:
    """``[cx, cy, w*h, w/h]`` of ``xyxy`` box(es), sides at least 1 px.

    One box (once per matched track and frame) in Python floats: the same IEEE
    operations, at a fraction of the cost of stacking four 0-d arrays.
    """
    b = np.asarray(box, np.float64)
    if b.shape == (4,):
        x0, y0, x1, y1 = b.tolist()
        w, h = _at_least(x1 - x0, MIN_SIDE), _at_least(y1 - y0, MIN_SIDE)
        return np.array([0.5 * (x0 + x1), 0.5 * (y0 + y1), w * h, w / h])
    ws = np.maximum(b[..., 2] - b[..., 0], MIN_SIDE)
    hs = np.maximum(b[..., 3] - b[..., 1], MIN_SIDE)
    cx, cy = 0.5 * (b[..., 0] + b[..., 2]), 0.5 * (b[..., 1] + b[..., 3])
    return np.stack([cx, cy, ws * hs, ws / hs], axis=-1)


def _at_least(value: float, floor: float) -> float:
    """``np.maximum(value, floor)`` for Python floats: NaN stays NaN."""
    return floor if value < floor else value


def xyxy_from_xysr(mean: np.ndarray) -> np.ndarray:
    """``xyxy`` boxes of ``(..., 7)`` states (sides at least 1 px)."""
    m = np.asarray(mean, np.float64)
    s, r = np.maximum(m[..., 2], MIN_SIDE), np.maximum(m[..., 3], MIN_RATIO)
    w, h = np.maximum(np.sqrt(s * r), MIN_SIDE), np.maximum(np.sqrt(s / r), MIN_SIDE)
    return np.stack(
        [m[..., 0] - w / 2, m[..., 1] - h / 2, m[..., 0] + w / 2, m[..., 1] + h / 2], -1
    )


def xysr_initiate(box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A new track's state from its first padded box: zero velocity, SORT's wide variance."""
    mean = np.zeros(XYSR_DIM)
    mean[:4] = xysr_from_xyxy(box)
    return mean, np.diag(_P0)


def xysr_predict(means: np.ndarray, covs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One constant-velocity step for ``(n, 7)`` means; an area about to vanish stops shrinking."""
    means = np.array(means, np.float64).reshape(-1, XYSR_DIM)
    means[means[:, 2] + means[:, 6] <= 0, 6] = 0.0
    means = means @ _MOTION.T
    covs = np.einsum("ij,njk,lk->nil", _MOTION, covs, _MOTION)
    idx = np.arange(XYSR_DIM)
    covs[:, idx, idx] += _Q
    return means, 0.5 * (covs + np.swapaxes(covs, -1, -2))


def xysr_update(
    mean: np.ndarray, cov: np.ndarray, box: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Correct one track's state with its matched padded box (Joseph form, Cholesky solve)."""
    return _joseph_update(mean, cov, xysr_from_xyxy(box), _R)


_EYES = {n: np.eye(n) for n in (7, 8)}  # the two filters' state sizes; copied before use


def _joseph_update(
    mean: np.ndarray, cov: np.ndarray, z: np.ndarray, r: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The Kalman correction both box filters share: the first four state entries are
    measured as ``z`` with noise variances ``r``; Joseph form, Cholesky solve, symmetrised."""
    s = cov[:4, :4] + np.diag(r)
    s = 0.5 * (s + s.T)
    gain = cholesky_solve(s, cov[:4, :]).T
    new_mean = mean + gain @ (z - mean[:4])
    i_kh = _EYES[len(mean)].copy() if len(mean) in _EYES else np.eye(len(mean))
    i_kh[:, :4] -= gain
    new_cov = i_kh @ cov @ i_kh.T + (gain * r) @ gain.T
    return new_mean, 0.5 * (new_cov + new_cov.T)


def assign_masked(score: np.ndarray, valid: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-``score`` pairs over the whole matrix, then the inadmissible ones dropped.

    OC-SORT's rule: admissibility is decided on geometry alone and the score
    (geometry plus momentum) only orders; an inadmissible pair's own low score
    is what leaving its row and column unmatched is worth.
    """
    if score.size == 0:
        return []
    finite = np.isfinite(score)
    valid = valid & finite
    if not valid.any():
        return []
    floor = float(score[finite].min()) - 1e5
    rows, cols = linear_sum_assignment(-np.where(finite, score, floor))
    return [(int(r), int(c)) for r, c in zip(rows, cols) if valid[r, c]]


def unit_directions(dy: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """``(..., 2)`` unit ``(dy, dx)``; zero-length or non-finite gives ``(0, 0)``."""
    norm = np.hypot(dy, dx)
    ok = np.isfinite(norm) & (norm > 0)
    safe = np.where(ok, norm, 1.0)
    return np.stack([np.where(ok, dy / safe, 0.0), np.where(ok, dx / safe, 0.0)], axis=-1)


def centres(boxes: np.ndarray) -> np.ndarray:
    """``(..., 2)`` ``(cx, cy)`` of ``xyxy`` boxes."""
    return 0.5 * (boxes[..., :2] + boxes[..., 2:])


# ------------------------------------------------------- BoT-SORT's xywh filter
# State [cx, cy, w, h, vx, vy, vw, vh]; noise in fractions of the box's width (x, w
# terms) and height (y, h terms), sides clamped to 1 px (sleap-nn's KalmanFilterXYWH).
XYWH_DIM = 8
STD_POSITION = 1.0 / 20
STD_VELOCITY = 1.0 / 160
_MOTION8 = np.eye(XYWH_DIM)
_MOTION8[:4, 4:] = np.eye(4)


def cxcywh_from_xyxy(box: np.ndarray) -> np.ndarray:
    """``[cx, cy, w, h]`` of ``xyxy`` box(es), sides at least 1 px."""
    b = np.asarray(box, np.float64)
    w = np.maximum(b[..., 2] - b[..., 0], MIN_SIDE)
    h = np.maximum(b[..., 3] - b[..., 1], MIN_SIDE)
    return np.stack([0.5 * (b[..., 0] + b[..., 2]), 0.5 * (b[..., 1] + b[..., 3]), w, h], -1)


def xyxy_from_xywh(mean: np.ndarray) -> np.ndarray:
    """``xyxy`` boxes of ``(..., 8)`` states (sides at least 1 px)."""
    m = np.asarray(mean, np.float64)
    half = 0.5 * np.maximum(m[..., 2:4], MIN_SIDE)
    return np.concatenate([m[..., :2] - half, m[..., :2] + half], axis=-1)


def xywh_initiate(box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    z = cxcywh_from_xyxy(box)
    w, h = max(z[2], MIN_SIDE), max(z[3], MIN_SIDE)
    p, v = 2 * STD_POSITION, 10 * STD_VELOCITY
    mean = np.zeros(XYWH_DIM)
    mean[:4] = z
    return mean, np.diag(np.square([p * w, p * h, p * w, p * h, v * w, v * h, v * w, v * h]))


def xywh_predict(means: np.ndarray, covs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One step for ``(n, 8)`` means; a side about to vanish stops shrinking."""
    means = np.array(means, np.float64).reshape(-1, XYWH_DIM)
    for size, vel in ((2, 6), (3, 7)):
        means[means[:, size] + means[:, vel] <= 0, vel] = 0.0
    w, h = np.maximum(means[:, 2], MIN_SIDE), np.maximum(means[:, 3], MIN_SIDE)
    whwh = np.stack([w, h, w, h], axis=1)
    q = np.square(np.concatenate([STD_POSITION * whwh, STD_VELOCITY * whwh], axis=1))
    means = means @ _MOTION8.T
    covs = np.einsum("ij,njk,lk->nil", _MOTION8, covs, _MOTION8)
    idx = np.arange(XYWH_DIM)
    covs[:, idx, idx] += q
    return means, 0.5 * (covs + np.swapaxes(covs, -1, -2))


def xywh_update(mean: np.ndarray, cov: np.ndarray, box: np.ndarray, conf: float | None = None):
    """Correct one ``[cx, cy, w, h]`` state; ``conf``: StrongSORT's NSA, the measurement
    noise scaled by ``(1 - conf)^2`` (``conf`` clipped to [0, 0.99]) so a confident
    detection pulls the state harder."""
    z = cxcywh_from_xyxy(box)
    r = _xywh_measurement_var(mean)
    if conf is not None and np.isfinite(conf):
        r = r * (1.0 - min(max(float(conf), 0.0), NSA_MAX_CONF)) ** 2
    return _joseph_update(mean, cov, z, r)


NSA_MAX_CONF = 0.99  # NSA never scales the measurement noise to zero
CHI2_95_2DOF = 5.9915  # chi-square 0.95 quantile, 2 degrees of freedom (DeepSORT's gate)


def _xywh_measurement_var(mean: np.ndarray) -> np.ndarray:
    w, h = max(mean[2], MIN_SIDE), max(mean[3], MIN_SIDE)
    return np.square(STD_POSITION * np.array([w, h, w, h]))


def xywh_centre_distances(means: np.ndarray, covs: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """``(n, m)`` squared Mahalanobis distances of box centres to the predicted centres.

    DeepSORT's gate, on the centre only: a turning animal's box changes its shape
    faster than a pedestrian's. The innovation covariance uses the un-scaled
    measurement noise (no NSA), as sleap-nn; a non-finite box or state is ``inf``.
    """
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    out = np.full((len(means), len(boxes)), np.inf)
    if len(means) == 0 or len(boxes) == 0:
        return out
    z = cxcywh_from_xyxy(boxes)[:, :2]
    valid = np.isfinite(z).all(axis=1)
    if not valid.any():
        return out
    z = z[valid]
    for i, (mean, cov) in enumerate(zip(means, covs)):
        if not (np.isfinite(mean).all() and np.isfinite(cov).all()):
            continue
        s = cov[:4, :4] + np.diag(_xywh_measurement_var(mean))
        s = 0.5 * (s + s.T)
        d = z - mean[:2]
        out[i, valid] = np.maximum(np.sum(d * _solve_spd(s[:2, :2], d.T).T, axis=1), 0.0)
    return out


def cholesky_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``cho_solve(cho_factor(a, lower=True), b)`` for float64, called straight.

    The same LAPACK routines scipy's wrappers call (``dpotrf`` lower, then
    ``dpotrs``) on the same arrays, so the same bits (sleap-nn's MOT filters use
    scipy's wrappers); without their per-call argument checks, which were half of
    a Kalman update's time (the update runs once per matched track and frame).
    Like scipy: ``ValueError`` on a NaN or Inf input, ``LinAlgError`` when ``a``
    is not positive definite.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("array must not contain infs or NaNs")
    factor, info = dpotrf(a, lower=1, clean=0)
    if info > 0:
        raise np.linalg.LinAlgError(
            f"{info}-th leading minor of the array is not positive definite"
        )
    x, info = dpotrs(factor, b, lower=1)
    if info != 0:
        raise ValueError(f"illegal value in {-info}th argument of internal potrs")
    return x


def _solve_spd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x = b`` by Cholesky, with sleap-nn's growing jitter (then pseudo-inverse) when
    ``a`` is numerically not positive definite."""
    a = 0.5 * (a + a.T)
    scale = max(float(np.max(np.abs(np.diag(a)))), 1e-12)
    for attempt in range(5):
        shifted = (
            a + 0.0 if attempt == 0 else a + scale * 10.0 ** (-15 + 3 * attempt) * np.eye(len(a))
        )
        try:
            return cholesky_solve(shifted, b)
        except np.linalg.LinAlgError:
            continue
    return np.linalg.pinv(a) @ b


FEW_PAIRS = 16  # up to this many pairs, a pair's nodes as a row take fewer numpy calls


def _shared_extents_by_pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`shared_extents` with each pair's nodes as a row (the same numbers)."""
    shared = np.isfinite(a).all(-1)[:, None, :] & np.isfinite(b).all(-1)[None]  # (n, m, N)
    sel = shared[..., None]
    out = [shared.sum(axis=-1)]
    for pts in (a[:, None], b[None]):
        out.append(np.where(sel, pts, np.inf).min(axis=2, initial=np.inf))
        out.append(np.where(sel, pts, -np.inf).max(axis=2, initial=-np.inf))
    return tuple(out)


def shared_extents(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per pair of poses ``a`` (n, N, 2) and ``b`` (m, N, 2), the extents of the nodes
    visible in both: ``(count, lo_a, hi_a, lo_b, hi_b)``, count ``(n, m)``, the rest
    ``(n, m, 2)`` (``+inf``/``-inf`` where nothing is shared).

    Node-major planes (``(N, n, m)`` per axis, reduced over the first), so numpy's
    loops run over every pair at once: reducing each pair's few nodes as a short
    row was most of ByteTrack's time at 30 animals (for a handful of pairs the
    rows are still cheaper). Minima and maxima are exact, so no layout changes a
    bit.
    """
    if len(a) * len(b) <= FEW_PAIRS:
        return _shared_extents_by_pair(a, b)
    fin_a, fin_b = np.isfinite(a).all(-1).T, np.isfinite(b).all(-1).T  # (N, n), (N, m)
    shared = fin_a[:, :, None] & fin_b[:, None, :]  # (N, n, m)
    out = [shared.sum(axis=0)]
    everything = slice(None)
    for pts, expand in ((a, (everything,) * 3 + (None,)), (b, (everything,) * 2 + (None,))):
        planes = np.ascontiguousarray(pts.transpose(2, 1, 0))[expand]  # (2, N, n|1, 1|m)
        lo = np.where(shared, planes, np.inf).min(axis=1, initial=np.inf)
        hi = np.where(shared, planes, -np.inf).max(axis=1, initial=-np.inf)
        out += [np.moveaxis(lo, 0, -1), np.moveaxis(hi, 0, -1)]
    return tuple(out)


MIN_SHARED_NODES = 2  # a pair's shared-node boxes need this many nodes seen on both sides
MIN_SHARED_EXTENT = 1.0  # px, on at least one axis (the floor gives the other a size)


def _padded_extent(lo, hi, padding: float, min_side: float):
    pad = padding * (hi - lo).max(axis=-1, keepdims=True)
    lo, hi = lo - pad, hi + pad
    if np.isfinite(min_side) and min_side > 0:
        grow = 0.5 * np.maximum(min_side - (hi - lo), 0.0)
        lo, hi = lo - grow, hi + grow
    return lo, hi


def shared_node_iou(
    trk: np.ndarray, det: np.ndarray, padding: float, min_side: float
) -> np.ndarray:
    """``(n, m)`` IoU of boxes over only the nodes visible in both poses (NaN: too few).

    A partly occluded detection is thus compared with the same part of the
    track's pose, not with its whole-body box (sleap-nn's ByteTrack/BoT-SORT).
    """
    n, m = len(trk), len(det)
    out = np.full((n, m), np.nan)
    if n == 0 or m == 0:
        return out
    count, lo_t, hi_t, lo_d, hi_d = shared_extents(trk, det)
    with np.errstate(invalid="ignore"):
        wide_t = ((hi_t - lo_t) >= MIN_SHARED_EXTENT).any(axis=-1)
        wide_d = ((hi_d - lo_d) >= MIN_SHARED_EXTENT).any(axis=-1)
    ok = (count >= MIN_SHARED_NODES) & wide_t & wide_d
    if not ok.any():
        return out
    lo_t, hi_t = _padded_extent(lo_t[ok], hi_t[ok], padding, min_side)
    lo_d, hi_d = _padded_extent(lo_d[ok], hi_d[ok], padding, min_side)
    inter = np.clip(np.minimum(hi_t, hi_d) - np.maximum(lo_t, lo_d), 0.0, None).prod(axis=-1)
    union = (hi_t - lo_t).prod(axis=-1) + (hi_d - lo_d).prod(axis=-1) - inter
    iou_ = np.zeros_like(inter)
    np.divide(inter, union, out=iou_, where=union > 0)
    out[ok] = np.clip(iou_, 0.0, 1.0)
    return out
