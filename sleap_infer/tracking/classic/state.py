"""The classic tracker's memory as JSON plus arrays, and back, bit for bit.

Layout (``E`` remembered detections, in memory order: window frames oldest
first, or track queues by id, each oldest first):

* ``frame``, ``track`` (-1 = none), ``support`` int64 and ``score`` float64, ``(E,)``;
* poses: ``points`` float64 ``(E, N, 2)``: keypoint, centroid and box features
  are recomputed from them on load (same function, same bits);
* re-ID vectors: ``vectors`` float64 ``(E, D)``, a NaN row = no vector (the
  feature with ``embeddings``; beside the geometric feature with an
  ``appearance_weight`` blend, which ``meta["blend"]`` then says);
* masks: ``crop_box`` int64 ``(E, 4)`` = ``(y0, x0, h, w)``, ``crop_area``
  int64, and ``crop_bits``: all crops' pixels bit-packed end to end;
* fixed window: ``slot_frame`` / ``slot_size`` int64 (a frame and how many of
  the entries are its); local queues: ``queue_size`` int64 per track id;
* optical flow: ``image_frame`` int64 ``(K,)`` and ``images`` uint8, the
  prepared frames the memory refers to (at most one per remembered frame).

``meta`` names the tracker, layout version, carrier, candidates, features and
the next track id; a state made under other settings is refused.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from sleap_infer.core.errors import ResumeError
from sleap_infer.tracking.base import MASKS, TrackerState
from sleap_infer.tracking.classic.candidates import Entry, FixedWindow, LocalQueues, Slot
from sleap_infer.tracking.classic.features import MaskCrop, pose_feature
from sleap_infer.tracking.options import TrackingOptions

LAYOUT = 1


def _meta(options: TrackingOptions, carrier: str) -> dict[str, Any]:
    meta = {
        "tracker": "classic",
        "layout": LAYOUT,
        "carrier": carrier,
        "candidates": options.candidates,
        "features": options.features,
    }
    if options.appearance_weight > 0:  # only then, so states saved before still load
        meta["blend"] = True
    if options.use_kalman:  # the shift's own memory: meta["kalman"] and the kf_* arrays
        meta["use_kalman"] = True
    return meta


def _blends(options: TrackingOptions) -> bool:
    return options.appearance_weight > 0 and options.features != "embeddings"


def _vectors(rows: list[Any]) -> np.ndarray:
    dims = {np.asarray(r).size for r in rows if r is not None}
    if len(dims) > 1:
        raise ValueError(f"re-ID vectors of several lengths in one tracker: {sorted(dims)}")
    out = np.full((len(rows), dims.pop() if dims else 0), np.nan)
    for i, r in enumerate(rows):
        if r is not None:
            out[i] = r
    return out


def _rows(vectors: np.ndarray) -> list[np.ndarray | None]:
    return [None if np.isnan(row).all() else row.copy() for row in vectors]


def _masks(entries: list[Entry], arrays: dict[str, np.ndarray]) -> None:
    crops: list[MaskCrop] = [e.feature for e in entries]  # type: ignore[misc]
    arrays["crop_box"] = np.array(
        [(c.y0, c.x0, *c.crop.shape) for c in crops], dtype=np.int64
    ).reshape(-1, 4)
    arrays["crop_area"] = np.array([c.area for c in crops], dtype=np.int64)
    flat = [c.crop.reshape(-1) for c in crops]
    arrays["crop_bits"] = np.packbits(np.concatenate(flat) if flat else np.zeros(0, bool))


def dump_state(
    options: TrackingOptions,
    carrier: str,
    window: FixedWindow | LocalQueues,
    images: dict[int, np.ndarray],
) -> TrackerState:
    """Everything the tracker remembers (entries are copied into fresh arrays)."""
    entries = window.entries()
    arrays: dict[str, np.ndarray] = {
        "frame": np.array([e.frame_idx for e in entries], dtype=np.int64),
        "track": np.array([-1 if e.track is None else e.track for e in entries], dtype=np.int64),
        "support": np.array([e.support for e in entries], dtype=np.int64),
        "score": np.array([e.score for e in entries], dtype=np.float64),
    }
    if isinstance(window, FixedWindow):
        arrays["slot_frame"] = np.array([s.frame_idx for s in window.slots], dtype=np.int64)
        arrays["slot_size"] = np.array([len(s.entries) for s in window.slots], dtype=np.int64)
    else:
        arrays["queue_size"] = np.array([len(q) for q in window.queues], dtype=np.int64)
    if carrier != MASKS:
        stacked = [e.points for e in entries if e.points is not None]
        arrays["points"] = np.stack(stacked) if stacked else np.zeros((0, 0, 2))
    if options.features == "embeddings":
        arrays["vectors"] = _vectors([e.feature for e in entries])
    elif _blends(options):
        arrays["vectors"] = _vectors([e.vector for e in entries])
    if options.features == "masks":
        _masks(entries, arrays)
    if images:
        frames = sorted(images)
        arrays["image_frame"] = np.array(frames, dtype=np.int64)
        arrays["images"] = np.stack([images[f] for f in frames])
    meta = {**_meta(options, carrier), "next_id": int(window.next_id)}
    return TrackerState(meta=meta, arrays=arrays)


def _features(
    options: TrackingOptions, carrier: str, arrays: dict[str, np.ndarray], n: int
) -> list[Any]:
    if options.features == "embeddings":
        return _rows(arrays["vectors"])
    if options.features == "masks":
        bits = np.unpackbits(arrays["crop_bits"])
        out, start = [], 0
        for (y0, x0, h, w), area in zip(arrays["crop_box"].tolist(), arrays["crop_area"]):
            crop = bits[start : start + h * w].reshape(h, w).astype(bool)
            start += h * w
            out.append(MaskCrop(crop, int(y0), int(x0), int(area)))
        return out
    return [pose_feature(str(options.features), arrays["points"][i]) for i in range(n)]


def restore_state(
    state: TrackerState,
    options: TrackingOptions,
    carrier: str,
    window: FixedWindow | LocalQueues,
) -> dict[int, np.ndarray]:
    """Fill a fresh ``window`` from ``state``; returns the remembered images."""
    expected = _meta(options, carrier)
    got = {k: state.meta.get(k) for k in expected}
    if got != expected:
        raise ResumeError(f"tracker state was saved for {got}, this run tracks with {expected}")
    a = dict(state.arrays)
    n = int(a["frame"].shape[0])
    if "points" in a:
        a["points"] = np.array(a["points"], dtype=np.float64, copy=True)
    features = _features(options, carrier, a, n)
    vectors = _rows(a["vectors"]) if _blends(options) else [None] * n
    points = a.get("points")
    entries = [
        Entry(
            frame_idx=int(a["frame"][i]),
            support=int(a["support"][i]),
            feature=features[i],
            points=None if points is None else points[i],
            track=None if a["track"][i] < 0 else int(a["track"][i]),
            score=a["score"][i],
            vector=vectors[i],
        )
        for i in range(n)
    ]
    sizes = a["slot_size"] if isinstance(window, FixedWindow) else a["queue_size"]
    groups, start = [], 0
    for size in sizes.tolist():
        groups.append(entries[start : start + size])
        start += size
    if isinstance(window, FixedWindow):
        window.slots.extend(Slot(int(f), g) for f, g in zip(a["slot_frame"].tolist(), groups))
        window.next_id = int(state.meta["next_id"])
    else:
        window.queues = [deque(g, maxlen=window.size) for g in groups]
    if "images" not in a:
        return {}
    return {int(f): a["images"][i].copy() for i, f in enumerate(a["image_frame"].tolist())}
