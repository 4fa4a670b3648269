"""Frames stored in an HDF5 file, as sleap-nn 0.3.5 reads them (``--video_dataset``,
``--video_input_format``).

Labs export movies as rank-4 arrays in ``.h5`` files (a camera's SDK, a
preprocessing script), and SLEAP itself stores frames as a group holding a
``video`` dataset of encoded images (plus ``frame_numbers``). sleap-nn opens such
a file with ``sio.load_video(path, dataset=..., input_format=...)`` and predicts
frame ``i`` as ``video[i]`` for ``i`` in ``range(len(video))``. Reading the frames
through the same sleap-io backend keeps every detail of that layout (dataset
auto-detection, ``channels_first`` order, embedded images and their frame map,
channel order) identical instead of re-deriving it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sleap_infer.core.errors import VideoError
from sleap_infer.sources.video import (
    ABSENT,
    DECODE_ERROR,
    ErrorCallback,
    RunCollector,
    VideoInfo,
)

HDF5_SUFFIXES = frozenset({".h5", ".hdf5"})
INPUT_FORMATS = ("channels_last", "channels_first")
DEFAULT_FPS = 30.0  # sleap-io's HDF5Video reports no rate unless the file stores one


def is_hdf5_video(path: str | Path) -> bool:
    """An HDF5 file of frames, by its name (``.h5``, ``.hdf5``)."""
    return Path(path).suffix.lower() in HDF5_SUFFIXES


def _gray(frame: np.ndarray) -> bool:
    return frame.shape[-1] == 1 or bool(
        np.array_equal(frame[..., 0], frame[..., 1])
        and np.array_equal(frame[..., 0], frame[..., 2])
    )


class Hdf5VideoReader:
    """Frames of an HDF5 dataset with :class:`~sleap_infer.sources.video.VideoReader`'s
    interface. ``dataset`` None: sleap-io's auto-detection (the first rank-4 dataset,
    else the first embedded ``video`` dataset)."""

    def __init__(
        self, path: str | Path, dataset: str | None = None, input_format: str = "channels_last"
    ) -> None:
        import sleap_io as sio

        self.path = Path(path)
        if input_format not in INPUT_FORMATS:
            raise VideoError(
                f"--video-input-format {input_format}: choose channels_last or channels_first"
            )
        try:
            self.video: Any = sio.load_video(
                str(self.path), dataset=dataset, input_format=input_format
            )
            backend = self.video.backend
            found = getattr(backend, "dataset", None)
            if backend is None or found is None:
                raise ValueError("no rank-4 or embedded image dataset found")
            n_frames = int(backend.num_frames)
            first = np.asarray(self.video[0])
        except VideoError:
            raise
        except Exception as exc:  # h5py, sleap-io: a missing dataset, a non-HDF5 file ...
            where = f" (dataset {dataset!r})" if dataset else ""
            raise VideoError(f"{self.path}{where}: cannot read frames from HDF5: {exc}") from exc
        if first.ndim != 3 or first.shape[-1] not in (1, 3):
            raise VideoError(
                f"{self.path}: dataset {found!r} frames are {first.shape}, not height x width x "
                f"1 or 3 channels (--video-input-format {input_format}?)"
            )
        self.dataset = str(found)
        self.input_format = input_format
        fps = getattr(backend, "fps", None) or getattr(backend, "_fps", None)
        self.info = VideoInfo(
            path=self.path.absolute(),
            n_frames=n_frames,
            fps=float(fps) if fps else DEFAULT_FPS,
            height=int(first.shape[0]),
            width=int(first.shape[1]),
            grayscale=_gray(first),
            codec="hdf5",
            backend={"type": "HDF5Video", "dataset": self.dataset, "input_format": input_format},
        )

    def channels_for(self, model_channels: int) -> int:
        return self.info.channels_for(model_channels)

    def iter_frames(
        self,
        indices: Sequence[int] | None = None,
        channels: int = 3,
        on_error: ErrorCallback | None = None,
        start: int = 0,
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(frame_index, HxWxC uint8)``: frame ``i`` is sleap-io's ``video[i]``."""
        errors = RunCollector(on_error)
        n = self.info.n_frames
        wanted = range(max(start, 0), n) if indices is None else sorted(set(indices))
        for index in wanted:
            if not 0 <= index < n:
                errors.add(index, f"no such frame: the dataset has {n}", ABSENT)
                continue
            try:
                frame = np.asarray(self.video[index])
            except Exception as exc:  # an undecodable embedded image costs one frame
                errors.add(index, f"frame {index}: {type(exc).__name__}: {exc}", DECODE_ERROR)
                continue
            if frame.dtype != np.uint8:
                frame = np.clip(frame, 0, 255).astype(np.uint8)
            errors.flush()
            yield index, _coerce(frame, channels)
        errors.flush()


def _coerce(frame: np.ndarray, channels: int) -> np.ndarray:
    """``channels`` (1 or 3) from a gray or RGB frame, as the other readers give them."""
    if frame.shape[-1] == channels:
        return np.ascontiguousarray(frame)
    if channels == 3:
        return np.repeat(frame, 3, axis=-1)
    return np.ascontiguousarray(frame[..., :1])
