"""``--overlay-path``: a PNG of the first masked frame, for a reviewer's first look.

sleap-nn 0.3.5's review overlay, drawn the same way: each mask blended 50/50
with a colour cycled by its index and outlined; a mask whose predicted IoU is
under the backend's nominal floor (SAM1 0.88, SAM3 0.5) gets a thick red
outline and its score written at its centroid, so the doubtful ones stand out.
The floor only flags: no mask is dropped for it. Nothing is written where the
first frame has no masks (as sleap-nn).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

COLORS = [
    (255, 80, 80),
    (80, 255, 80),
    (80, 80, 255),
    (255, 255, 80),
    (255, 80, 255),
    (80, 255, 255),
    (255, 160, 80),
    (160, 80, 255),
]
WARNING = (255, 0, 0)


def save_overlay(labels: Any, path: Path, iou_floor: float | None) -> Path | None:
    """Draw the first labeled frame of ``labels`` with its masks into ``path`` (PNG)."""
    import cv2

    frames = list(labels.labeled_frames)
    if not frames or not frames[0].masks:
        return None
    lf = frames[0]
    img = np.asarray(lf.image)
    if img.ndim == 3 and img.shape[-1] == 1:
        img = img[..., 0]
    rgb = (np.stack([img] * 3, axis=-1) if img.ndim == 2 else img).astype(np.float32)
    h, w = rgb.shape[:2]
    for i, m in enumerate(lf.masks):
        decoded = np.asarray(m.data, dtype=bool)
        mm = np.zeros((h, w), bool)
        hh, ww = min(h, decoded.shape[0]), min(w, decoded.shape[1])
        mm[:hh, :ww] = decoded[:hh, :ww]
        score = float(getattr(m, "score", 0.0))
        c = np.array(COLORS[i % len(COLORS)], dtype=np.float32)
        rgb[mm] = 0.5 * rgb[mm] + 0.5 * c
        contours, _ = cv2.findContours(
            mm.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE
        )
        if iou_floor is not None and score < iou_floor:
            cv2.drawContours(rgb, contours, -1, WARNING, 4)
            ys, xs = np.nonzero(mm)
            if xs.size:
                at = (int(xs.mean()), int(ys.mean()))
                # OpenCV 5 writes text on 8-bit images only (sleap-nn's float canvas fails
                # there): the canvas is rounded down to 8 bits here, as it is at the end.
                canvas = np.ascontiguousarray(rgb.astype(np.uint8))
                cv2.putText(
                    canvas,
                    f"!{score:.2f}",
                    at,
                    cv2.FONT_HERSHEY_SIMPLEX,
                    0.5,
                    WARNING,
                    1,
                    cv2.LINE_AA,
                )
                rgb = canvas.astype(np.float32)
        else:
            cv2.drawContours(rgb, contours, -1, tuple(int(x) for x in c), 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(path), rgb[..., ::-1].astype(np.uint8)):
        from sleap_infer.core.errors import OutputError

        raise OutputError(f"--overlay-path {path}: could not write a PNG there")
    return path
