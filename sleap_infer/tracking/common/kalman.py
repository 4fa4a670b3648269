"""Constant-velocity Kalman filter on boxes, for ByteTrack, batched over tracks.

State ``[cx, cy, w, h, vcx, vcy, vw, vh]`` (8-dim), measurement ``[cx, cy, w,
h]``. The box is parameterized by width and height (``xywh``), not by aspect
ratio and height (``xyah``, the pedestrian ByteTrack's): a turning animal's
aspect ratio changes fast, which an ``xyah`` filter tuned for people follows
badly (sleap-nn's "animal" preset makes the same choice). Noise is DeepSORT's:
standard deviations are fixed fractions of the box's width (x terms) and height
(y terms), so the filter behaves the same at every animal size.

Every function takes and returns plain float64 arrays with one row per track
and keeps no state of its own: a tracker's ``(mean, cov)`` arrays *are* the
filter's state, which is what lets infer_bytetrack's :class:`~.infer_bytetrack.tracker.ByteTracker`
save and restore it bit for bit.
"""

from __future__ import annotations

import numpy as np

STD_POSITION = 1.0 / 20  # position noise, as a fraction of the box side
STD_VELOCITY = 1.0 / 160  # velocity noise, as a fraction of the box side
MIN_SIDE = 1.0  # px; sizes are clamped to this so noise never vanishes

_MOTION = np.eye(8)
_MOTION[:4, 4:] = np.eye(4)  # each position moves by its velocity once per step


def xywh_from_xyxy(boxes: np.ndarray) -> np.ndarray:
    """``(n, 4)`` ``[x0, y0, x1, y1]`` boxes as ``[cx, cy, w, h]`` (sides >= 1 px)."""
    b = np.asarray(boxes, dtype=np.float64)
    centre = 0.5 * (b[:, :2] + b[:, 2:])
    size = np.maximum(b[:, 2:] - b[:, :2], MIN_SIDE)
    return np.concatenate([centre, size], axis=1)


def xyxy_from_mean(mean: np.ndarray) -> np.ndarray:
    """The ``(n, 4)`` ``[x0, y0, x1, y1]`` boxes of ``(n, 8)`` state means."""
    centre = mean[:, :2]
    half = 0.5 * np.maximum(mean[:, 2:4], MIN_SIDE)
    return np.concatenate([centre - half, centre + half], axis=1)


def _whwh(size: np.ndarray) -> np.ndarray:
    """``(n, 4)`` ``[w, h, w, h]`` from ``(n, 2)`` sizes, clamped: the noise scales."""
    size = np.maximum(size, MIN_SIDE)
    return np.concatenate([size, size], axis=1)


def initiate(measurements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """New tracks' ``(mean, cov)`` from their first ``(n, 4)`` ``[cx, cy, w, h]``.

    Velocities start at zero with a wide variance (ten times the process
    noise), so the first few matches set them.
    """
    z = np.asarray(measurements, dtype=np.float64)
    mean = np.concatenate([z, np.zeros_like(z)], axis=1)
    whwh = _whwh(z[:, 2:4])
    std = np.concatenate([2 * STD_POSITION * whwh, 10 * STD_VELOCITY * whwh], axis=1)
    cov = np.zeros((len(z), 8, 8))
    idx = np.arange(8)
    cov[:, idx, idx] = np.square(std)
    return mean, cov


def predict(
    mean: np.ndarray, cov: np.ndarray, freeze_size: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One step of constant-velocity motion for every track.

    ``freeze_size`` (``(n,)`` bool) zeroes those tracks' size velocities first:
    a track that was not seen last step (a lost one) keeps moving but stops
    growing or shrinking, as BoT-SORT does. A size velocity that would take a
    side to zero or below is zeroed too.
    """
    mean = mean.copy()
    shrink = mean[:, 2:4] + mean[:, 6:8] <= 0
    if freeze_size is not None:
        shrink |= freeze_size[:, None]
    mean[:, 6:8] = np.where(shrink, 0.0, mean[:, 6:8])
    whwh = _whwh(mean[:, 2:4])
    var = np.square(np.concatenate([STD_POSITION * whwh, STD_VELOCITY * whwh], axis=1))
    mean = mean @ _MOTION.T
    cov = _MOTION @ cov @ _MOTION.T
    idx = np.arange(8)
    cov[:, idx, idx] += var
    return mean, cov


def update(
    mean: np.ndarray, cov: np.ndarray, measurements: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Correct ``(n, 8)`` means and ``(n, 8, 8)`` covariances with ``(n, 4)`` measurements.

    The covariance update is the Joseph form, which equals ``P - K S K^T`` in
    exact arithmetic but stays symmetric positive semi-definite under rounding,
    so a track can live for a whole video without its covariance degrading.
    """
    z = np.asarray(measurements, dtype=np.float64)
    r = np.square(STD_POSITION * _whwh(mean[:, 2:4]))  # (n, 4) measurement variance
    idx = np.arange(4)
    s = cov[:, :4, :4].copy()
    s[:, idx, idx] += r
    p_ht = cov[:, :, :4]  # P H^T, (n, 8, 4)
    # K = P H^T S^-1, i.e. K^T = S^-1 (P H^T)^T with S symmetric.
    gain = np.swapaxes(np.linalg.solve(s, np.swapaxes(p_ht, 1, 2)), 1, 2)
    innovation = z - mean[:, :4]
    mean = mean + np.einsum("nij,nj->ni", gain, innovation)
    i_kh = np.broadcast_to(np.eye(8), cov.shape).copy()
    i_kh[:, :, :4] -= gain
    cov = i_kh @ cov @ np.swapaxes(i_kh, 1, 2)
    cov += np.einsum("nik,nk,njk->nij", gain, r, gain)
    return mean, 0.5 * (cov + np.swapaxes(cov, 1, 2))
