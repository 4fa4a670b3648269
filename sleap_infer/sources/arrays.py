"""Frames handed over in memory: numpy arrays, lists of frames, ``sio.Video`` objects.

The Python API takes what a notebook has at hand. Each is turned into the
same thing a file reader yields, numbered ``(index, (H, W, C) uint8)`` frames,
or refused in one line that says what was wrong and where:

* A 2-D array is one grayscale frame. A 4-D array is ``(N, H, W, C)``. A 3-D
  array is one ``(H, W, C)`` frame when its last axis is 1, 3 or 4 channels
  (4: RGBA, alpha dropped), else ``(N, H, W)`` grayscale frames: a
  grayscale stack must never be read as one frame of N channels.
* Only uint8 pixels go through unchanged. Other integer arrays are converted
  when every value fits 0..255 (booleans are masks, not images); float
  arrays only when every value is a whole number in 0..255 and not all of
  them are 0 or 1. A float frame
  in 0..1 is refused, never rescaled: whether 1.0 means white or almost
  black is a guess, and a wrong guess moves keypoints without a word.
* A list (or tuple) holds frames of one shape each (2-D or 3-D, as above).
* A ``sio.Video`` is read through sleap-io itself, so frame ``i`` is the frame
  sleap-io (and SLEAP) call ``i``, whatever its backend (media, images, HDF5).

Channels are left as given (1 or 3): the layer turns them into what the model
was trained on, as it does for a video's frames.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sleap_infer.core.errors import UsageError

# What Pipeline.predict takes (Any: a sio.Video, told apart without importing sleap-io).
Source = str | Path | np.ndarray | Sequence[np.ndarray] | Any
CHANNELS = (1, 3, 4)


def as_frames(array: np.ndarray, where: str = "frames") -> np.ndarray:
    """``(N, H, W, C)`` uint8 frames (C 1 or 3) from any accepted array shape and dtype."""
    array = np.asarray(array)
    if array.ndim == 2:
        frames = array[None, :, :, None]
    elif array.ndim == 3 and array.shape[-1] in CHANNELS:
        frames = array[None]
    elif array.ndim == 3:
        frames = array[..., None]
    elif array.ndim == 4:
        frames = array
    else:
        raise UsageError(
            f"{where}: an array of shape {array.shape} is not frames; expected (H, W), "
            "(H, W, C), (N, H, W) or (N, H, W, C)"
        )
    if frames.shape[-1] not in CHANNELS:
        raise UsageError(
            f"{where}: frames of shape {frames.shape[1:]} have {frames.shape[-1]} channels; "
            "expected 1 (grayscale), 3 (RGB) or 4 (RGBA)"
        )
    if min(frames.shape[1:3], default=0) < 1 or frames.shape[0] < 1:
        raise UsageError(f"{where}: no pixels (shape {array.shape})")
    frames = to_uint8(frames, where)
    if frames.shape[-1] == 4:
        frames = frames[..., :3]
    return np.ascontiguousarray(frames)


def to_uint8(frames: np.ndarray, where: str = "frames") -> np.ndarray:
    """``frames`` as uint8, only when that is exact and unambiguous (see the module doc)."""
    kind = frames.dtype.kind
    if frames.dtype == np.uint8:
        return frames
    if kind == "b":
        raise UsageError(
            f"{where}: boolean frames (a mask?) are not images; give uint8 pixels in 0..255"
        )
    if kind in "iu":
        lo, hi = int(frames.min()), int(frames.max())
        if lo < 0 or hi > 255:
            raise UsageError(
                f"{where}: {frames.dtype} pixels span {lo}..{hi}, beyond uint8's 0..255; "
                "scale them to 0..255 and convert with .astype(np.uint8) first"
            )
        return frames.astype(np.uint8)
    if kind == "f":
        return _floats_to_uint8(frames, where)
    raise UsageError(f"{where}: {frames.dtype} frames are not images; give uint8 pixels")


def _floats_to_uint8(frames: np.ndarray, where: str) -> np.ndarray:
    if not np.isfinite(frames).all():
        raise UsageError(f"{where}: float frames hold NaN or infinity; give uint8 pixels")
    lo, hi = float(frames.min()), float(frames.max())
    whole = bool(np.all(frames == np.round(frames)))
    if whole and lo >= 0 and hi <= 255 and hi > 1:
        return frames.astype(np.uint8)
    if lo >= 0 and hi <= 1:
        raise UsageError(
            f"{where}: float frames in {lo:g}..{hi:g} are ambiguous (0..1 or 0..255?) and "
            "are never rescaled; convert them yourself, e.g. "
            "(frames * 255).round().astype(np.uint8)"
        )
    raise UsageError(
        f"{where}: float frames in {lo:g}..{hi:g} are not whole uint8 values; convert them "
        "to uint8 pixels in 0..255 yourself"
    )


def stack_frames(frames: Sequence[Any]) -> np.ndarray:
    """A list of frames as one ``(N, H, W, C)`` array; every frame the same shape."""
    if len(frames) == 0:
        raise UsageError("frames: the list is empty")
    out = []
    first: tuple[int, ...] | None = None
    for i, frame in enumerate(frames):
        array = np.asarray(frame)
        if array.ndim not in (2, 3):
            raise UsageError(
                f"frames[{i}]: shape {array.shape} is not one frame; expected (H, W) or (H, W, C)"
            )
        one = as_frames(array if array.ndim == 2 else array[None], f"frames[{i}]")
        if first is None:
            first = one.shape[1:]
        elif one.shape[1:] != first:
            raise UsageError(
                f"frames[{i}]: shape {one.shape[1:]} differs from frames[0]'s {first}; "
                "give frames of one size"
            )
        out.append(one)
    return np.concatenate(out)


@dataclass
class ArrayFrames:
    """Frames in memory, numbered 0..N-1, read like a video."""

    frames: np.ndarray  # (N, H, W, C) uint8

    @property
    def n_frames(self) -> int:
        return int(self.frames.shape[0])

    def iter_frames(self, indices: Sequence[int] | None) -> Iterator[tuple[int, np.ndarray]]:
        for i in range(self.n_frames) if indices is None else indices:
            yield i, self.frames[i]


@dataclass
class SioVideoFrames:
    """A ``sio.Video``'s frames, read by sleap-io (its own frame numbering)."""

    video: Any  # sio.Video
    name: str = ""

    @property
    def n_frames(self) -> int:
        return int(self.video.shape[0])

    def iter_frames(self, indices: Sequence[int] | None) -> Iterator[tuple[int, np.ndarray]]:
        for i in range(self.n_frames) if indices is None else indices:
            yield i, as_frames(np.asarray(self.video[i]), f"{self.name} frame {i}")[0]


def is_sio_video(obj: object) -> bool:
    """Whether ``obj`` is a sleap-io ``Video`` (checked without importing sleap-io)."""
    cls = type(obj)
    return cls.__name__ == "Video" and cls.__module__.startswith("sleap_io")
