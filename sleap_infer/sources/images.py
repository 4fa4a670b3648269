"""Read a folder of images (or a glob's images) as one video, frame k = k-th name.

Labs export frames as PNG/JPEG/TIFF folders; sleap-io calls such a folder an
``ImageVideo`` and sleap-nn predicts it frame by frame. A folder's frames are
exactly sleap-io's ``ImageVideo.find_images(folder)``: names whose suffix is one
of its lower-case extensions, sorted plainly (``f10`` before ``f2``), so frame
``i`` in every output (CSV, analysis HDF5, NWB) is ``sio.load_video(folder)[i]``.
Natural order (``f2`` before ``f10``) read better but pointed those indices at
other images than sleap-io shows. Images sleap-io leaves out (an upper-case
``.PNG`` beside lower-case ones) are left out too, with a note naming them; a
folder whose images all have upper-case suffixes (sleap-io finds none) is read
in the same plain order. A glob's matches are sorted plainly as well. Pixels are
decoded with imageio (Pillow), the same decoder sleap-io uses, so JPEG pixels
match what sleap-nn sees (PyAV's JPEG colour conversion differs by a few levels).
CMYK (and other non-RGB colour) images are converted to RGB by Pillow, as
sleap-io's OpenCV reader does (within one level): imageio returns CMYK's four
channels, and reading them as RGBA dropped K and moved keypoints by 170 px.

A sequence has no container to promise a shape, so the first image that
decodes sets it. Images of another size are refused when the sequence is opened
(one line naming the first odd one): sleap-io's ``ImageVideo`` takes its shape
from the first image too, a model cannot batch mixed sizes, and dropping all
frames but the first's size silently lost most of a folder. An image that fails
to decode costs that frame only: it is reported to ``on_error`` and skipped.

16-bit images often hold 10-, 12- or 14-bit camera data: scaling 0-65535 to
0-255 left 12-bit frames near black (0-16). The sequence's bit depth is the
first image's highest set bit, rounded up to an even count (8-16), and every
frame is scaled by it (values beyond it clip), so frames stay comparable.
"""

from __future__ import annotations

import glob
import io
from collections.abc import Iterator, Sequence
from pathlib import Path

import imageio.v3 as iio
import numpy as np
from PIL import Image

from sleap_infer.core.errors import VideoError
from sleap_infer.sources.inputs import is_image
from sleap_infer.sources.slp import error_reason
from sleap_infer.sources.video import (
    ABSENT,
    DECODE_ERROR,
    DEFAULT_FPS,
    ErrorCallback,
    RunCollector,
    VideoInfo,
)

# sleap-io's ImageVideo.EXTS, matched case-sensitively as its find_images does.
SLEAP_IO_IMAGE_EXTS = ("png", "jpg", "jpeg", "tif", "tiff", "bmp")
# Colour models that are not RGB: Pillow converts them, imageio would hand back raw channels.
_CONVERTED_MODES = frozenset({"CMYK", "YCbCr", "LAB", "HSV"})


def sequence_files(path: str | Path) -> tuple[list[Path], list[Path]]:
    """The frames of an image folder or glob, and the images left out of them.

    A folder's frames are sleap-io's ``find_images`` list (every entry whose suffix is
    a lower-case image extension, hidden ones included, sorted plainly), so index ``i``
    means ``sio.load_video(folder)[i]``; images with other-case suffixes are returned
    as left out. When sleap-io finds none, those are the frames (in the same order).
    """
    path = Path(path)
    if path.is_dir():
        entries = sorted(path.glob("*"), key=lambda p: p.as_posix())
        frames = [p for p in entries if p.suffix[1:] in SLEAP_IO_IMAGE_EXTS]
        taken = set(frames)
        others = [p for p in entries if p not in taken and p.is_file() and is_image(p)]
        return (frames, others) if frames else (others, [])
    matches = (Path(m) for m in glob.glob(str(path), recursive=True))
    return sorted((m for m in matches if m.is_file() and is_image(m)), key=str), []


class _BadImage(Exception):
    """An image that decodes but cannot be a frame (pixel type, channel count)."""


def _read(path: Path, depth: int = 16) -> np.ndarray:
    """HxWxC uint8 (C = 1 or 3). 16-bit images are scaled from ``depth`` bits; alpha dropped.

    The bytes are read here, not by imageio, which leaves the file open when decoding fails.
    """
    img = _read_raw(path)
    if img.dtype == np.uint16:
        top = (1 << depth) - 1
        img = ((np.minimum(img, top).astype(np.uint32) * 255 + top // 2) // top).astype(np.uint8)
    return np.ascontiguousarray(img)


def bit_depth(img: np.ndarray) -> int:
    """The bits a 16-bit image's data really uses: its highest set bit, rounded up to even."""
    if img.dtype != np.uint16:
        return 8
    used = int(img.max()).bit_length()
    return min(16, max(8, used + used % 2))


def _read_raw(path: Path) -> np.ndarray:
    """HxWxC uint8 or uint16, C = 1 or 3."""
    data = path.read_bytes()
    if not data:
        raise _BadImage("empty file")
    img = np.asarray(_decode(data, path.suffix.lower()))
    if img.ndim == 2:
        img = img[..., None]
    if img.ndim != 3 or img.shape[-1] not in (1, 2, 3, 4):
        raise _BadImage(f"unsupported image shape {img.shape}")
    if img.shape[-1] in (2, 4):  # gray + alpha, RGB + alpha
        img = img[..., :-1]
    if img.dtype not in (np.uint8, np.uint16):
        raise _BadImage(f"unsupported pixel type {img.dtype}")
    return img


def _decode(data: bytes, extension: str) -> np.ndarray:
    """Pixels as imageio gives them, except non-RGB colour models, which Pillow turns to RGB."""
    try:
        with Image.open(io.BytesIO(data)) as im:  # reads the header only
            if im.mode in _CONVERTED_MODES:
                return np.asarray(im.convert("RGB"))
    except Exception:  # not something Pillow knows: let imageio try (and name the error)
        pass
    return np.asarray(iio.imread(data, extension=extension))


def _coerce(frame: np.ndarray, channels: int) -> np.ndarray:
    """A gray image repeated for a colour model; the first channel for a gray one."""
    if frame.shape[-1] == channels:
        return frame
    if channels == 1:
        return np.ascontiguousarray(frame[..., :1])
    return np.repeat(frame, channels, axis=-1)


def _left_out_note(folder: Path, left_out: list[Path]) -> tuple[str, ...]:
    """One line naming the images sleap-io (and so this run) leaves out of a folder."""
    if not left_out:
        return ()
    return (
        f"{folder}: {len(left_out)} image(s) with an upper-case suffix left out "
        f"(first: {left_out[0].name}), as sleap-io leaves them out of the folder's frames; "
        "rename them with a lower-case suffix to include them",
    )


class ImageSequenceReader:
    """An image folder or glob with :class:`~sleap_infer.sources.video.VideoReader`'s interface.

    ``info.path`` is the folder (outputs are named after it); ``info.files``
    the images, absolute, which the output's video references. Nothing stays
    open, so a reader may be iterated from a decode thread.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        files, left_out = sequence_files(self.path)
        self.files = [p.absolute() for p in files]
        if not self.files:
            raise VideoError(f"{self.path}: no images (png, jpg, tif, bmp) found")
        raw = self._reference()
        self.depth = bit_depth(raw)
        first = _read(self.files[self._first], self.depth)
        self._check_sizes(first.shape[:2])
        folder = self.path if self.path.is_dir() else self.path.parent
        self.info = VideoInfo(
            path=folder.absolute(),
            n_frames=len(self.files),
            fps=DEFAULT_FPS,  # images carry no rate; sleap-io assumes none, labels_video 30
            height=int(first.shape[0]),
            width=int(first.shape[1]),
            grayscale=first.shape[-1] == 1
            or bool(
                np.array_equal(first[..., 0], first[..., 1])
                and np.array_equal(first[..., 0], first[..., 2])
            ),
            codec=self.files[0].suffix.lower().lstrip("."),
            files=tuple(str(p) for p in self.files),
            notes=_left_out_note(self.path, left_out),
        )

    def _check_sizes(self, size: tuple[int, ...]) -> None:
        """Refuse a sequence whose images differ in size (read from headers only)."""
        odd = []
        for path in self.files:
            try:
                with Image.open(path) as im:
                    width, height = im.size
            except Exception:  # undecodable: a bad frame when its turn comes
                continue
            if (height, width) != tuple(size):
                odd.append((path, height, width))
        if odd:
            path, height, width = odd[0]
            raise VideoError(
                f"{self.path}: images differ in size: {path.name} is {height}x{width}, "
                f"{self.files[self._first].name} is {size[0]}x{size[1]} ({len(odd)} of "
                f"{len(self.files)} differ); resize them to one size"
            )

    def _reference(self) -> np.ndarray:
        """The first image that decodes sets the size (the ones before it are bad frames)."""
        first_problem = ""
        for k, path in enumerate(self.files):
            try:
                img = _read_raw(path)
                self._first = k
                return img
            except Exception as exc:  # Pillow, tifffile: whatever a damaged file raises
                first_problem = first_problem or f"{path.name}: {error_reason(exc)}"
        raise VideoError(
            f"{self.path}: none of its {len(self.files)} images decodes ({first_problem})"
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
        """Yield ``(frame_index, HxWxC uint8)`` for the requested (sorted) indices or all frames.

        ``start`` skips the frames before it when ``indices`` is None. An image
        that fails to decode or has another size is reported and skipped.
        """
        errors = RunCollector(on_error)
        n = len(self.files)
        wanted = range(max(start, 0), n) if indices is None else sorted(set(indices))
        size = (self.info.height, self.info.width)
        for index in wanted:
            if not 0 <= index < n:
                errors.add(index, f"no such image: the sequence has {n}", ABSENT)
                continue
            path = self.files[index]
            try:
                frame = _read(path, self.depth)
            except Exception as exc:  # one damaged image costs one frame
                errors.add(index, f"{path.name}: decode error: {error_reason(exc)}", DECODE_ERROR)
                continue
            if frame.shape[:2] != size:
                got = f"{frame.shape[0]}x{frame.shape[1]}"
                errors.add(index, f"{path.name} is {got}, not {size[0]}x{size[1]}", DECODE_ERROR)
                continue
            errors.flush()  # report in frame order, and never hold an error while suspended
            yield index, _coerce(frame, channels)
        errors.flush()
