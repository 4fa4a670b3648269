"""Optical-flow shift of remembered poses onto the current frame (``--use-flow``).

sleap-nn's ``FlowShiftTracker``: before scoring, every remembered pose is
moved by pyramidal Lucas-Kanade flow from *its own* frame to the current one
(one OpenCV call per remembered frame), points the flow loses become NaN,
and the candidate's feature is recomputed from the shifted float32 points.
So the tracker keeps the image of every frame its memory still refers to,
already in the form the flow reads: uint8, and scaled by ``of_img_scale``.
sleap-nn turns a colour frame grey only when its *first* axis is 3 (a
channel-first layout it never gets), so an ``(H, W, 3)`` frame is tracked in
colour; we do the same. OpenCV is imported on first use.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from sleap_infer.core.errors import UsageError

_CRITERIA_COUNT = 30
_CRITERIA_EPS = 0.01


def _cv2() -> ModuleType:
    try:
        import cv2
    except ImportError as exc:
        raise UsageError("--use-flow needs OpenCV: pip install opencv-python-headless") from exc
    return cv2


def require() -> None:
    """Fail before the first frame, not at it, when OpenCV is missing."""
    _cv2()


def prepare(image: np.ndarray | None, scale: float) -> np.ndarray:
    """A frame as the flow reads it (sleap-nn's pre-processing, applied once)."""
    if image is None:
        raise UsageError("--use-flow: the tracker was given a frame without its image")
    cv2 = _cv2()
    img = np.asarray(image)
    if np.issubdtype(img.dtype, np.floating):
        img = img.astype("uint8")
    if img.ndim > 3:
        img = np.squeeze(img)
    if img.ndim > 2 and img.shape[0] == 3:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    if scale != 1:
        img = cv2.resize(img, None, None, scale, scale)
    return np.ascontiguousarray(img)


def shift(
    points: list[np.ndarray],
    ref: np.ndarray,
    new: np.ndarray,
    scale: float,
    window: int,
    levels: int,
) -> list[np.ndarray]:
    """``points`` (each ``(N, 2)``) moved from prepared frame ``ref`` to ``new``; float32."""
    cv2 = _cv2()
    stacked = np.concatenate(points, axis=0).astype("float32") * scale
    moved, status, _ = cv2.calcOpticalFlowPyrLK(
        ref,
        new,
        stacked,
        None,
        winSize=(window, window),
        maxLevel=levels,
        criteria=(cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, _CRITERIA_COUNT, _CRITERIA_EPS),
    )
    moved /= scale
    found = status.reshape(-1).astype(bool)
    moved[~found] = np.nan
    sections = np.cumsum([len(p) for p in points])[:-1]
    return np.split(moved, sections, axis=0)
