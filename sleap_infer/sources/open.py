"""One call that opens any input as numbered frames: a video file, an image folder or glob,
or a SLEAP project's video. The readers build on :mod:`sleap_infer.sources.video`;
this module sits above all three, so none of them imports another's sibling.
"""

from __future__ import annotations

from pathlib import Path

from sleap_infer.sources.hdf5 import Hdf5VideoReader, is_hdf5_video
from sleap_infer.sources.images import ImageSequenceReader
from sleap_infer.sources.inputs import is_labels_path, is_pattern
from sleap_infer.sources.labels_video import LabelsVideoReader
from sleap_infer.sources.remote import as_url, url_path
from sleap_infer.sources.video import VideoReader


def open_video(
    path: str | Path,
    video_index: int = 0,
    threads: int = 0,
    keep_corrupt: bool = False,
    dataset: str | None = None,
    input_format: str = "channels_last",
) -> VideoReader | LabelsVideoReader | ImageSequenceReader | Hdf5VideoReader:
    """A reader for a video file, for video ``video_index`` of a SLEAP project (``.slp``),
    for an image sequence (a folder, or a glob such as ``frames/*.png``), or for the
    frames in an HDF5 file (``.h5``: ``dataset``, in ``input_format`` axis order).

    ``video_index`` only picks among a project's videos; a plain video file ignores
    it, so one setting serves a batch mixing both (``dataset`` and ``input_format``
    likewise serve only HDF5 inputs). ``keep_corrupt``: see :class:`VideoReader`.
    """
    url = as_url(path)
    if url is not None:  # before the glob test: a URL's query has a '?'
        return VideoReader(url_path(url), threads, keep_corrupt)
    if Path(path).is_dir() or is_pattern(path):
        return ImageSequenceReader(path)
    if is_hdf5_video(path):
        return Hdf5VideoReader(path, dataset, input_format)
    if is_labels_path(path):
        return LabelsVideoReader(path, video_index, threads, keep_corrupt)
    return VideoReader(path, threads, keep_corrupt)
