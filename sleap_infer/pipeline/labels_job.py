"""A SLEAP file in, its labels changed, a SLEAP file out: re-embedding and re-tracking.

Both the lone embedding model (``infer predict -m embedding project.slp``) and
``infer track`` take detections that already exist, change them (new re-ID
vectors, new tracks) and write the whole labels back. sleap-io reads labels
whole, so there is nothing to stream and nothing to journal: the output is
written in one atomic step (:func:`~sleap_infer.writers.outputs.atomic_write`),
and never onto the file the labels came from, nor onto a file that holds
their frames (a ``.pkg.slp``'s embedded images).
"""

from __future__ import annotations

from pathlib import Path

import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.sources.slp import PROJECT, read_slp
from sleap_infer.writers.outputs import atomic_write


def load_labels(src: Path, what: str = PROJECT) -> sio.Labels:
    """The labels of ``src``, any failure one line naming it."""
    return read_slp(src, what)


def frame_sources(labels: sio.Labels) -> set[Path]:
    """Every file the labels' frames are read from (videos, image lists, packages)."""
    out = set()
    for video in labels.videos:
        names = video.filename if isinstance(video.filename, list) else [video.filename]
        out.update(Path(str(n)).resolve() for n in names)
    return out


def check_destination(src: Path, dst: Path, labels: sio.Labels) -> None:
    """Refuse to write onto the input or onto a file its frames come from."""
    target = Path(dst).resolve()
    if target == Path(src).resolve() or target in frame_sources(labels):
        raise UsageError(f"{dst}: holds the frames of {src}; write the output elsewhere")


def save_labels(labels: sio.Labels, dst: Path, vectors: bool) -> None:
    """Write ``labels`` to ``dst`` atomically, referring to the same media (nothing embedded);
    ``vectors``: keep the re-ID vectors (``identity_embedding``)."""
    atomic_write(
        Path(dst),
        lambda tmp: sio.save_slp(
            labels,
            str(tmp),
            embed=False,
            restore_original_videos=False,
            save_embedding_vectors=vectors,
        ),
    )


def has_vectors(labels: sio.Labels) -> bool:
    """Whether any detection carries a re-ID vector."""
    return any(
        getattr(d, "identity_embedding", None) is not None
        for lf in labels.labeled_frames
        for d in (*lf.instances, *lf.masks)
    )


def require_slp(path: Path, why: str) -> None:
    if not Path(path).name.lower().endswith(".slp"):
        raise UsageError(f"{path}: {why}")
