"""The records qc works on and writes: dense per-video arrays in, events and suggestions out.

One module holds the shapes every part of qc agrees on, so event finders, the frame
ranker and the HTML page are written and tested against the same dataclasses, and the
JSON layout (``{"files": [{"path", "videos": [{"video", "frames", "summary",
"events", "suggestions"}]}]}``) is defined once, by :meth:`QCResult.to_json`.

Arrays are dense over the labelled frames of one video: row ``f`` is the frame
``frames[f]`` (sorted, as sleap-io numbers frames for that video), column ``k`` is
track ``k`` when the file is tracked, else the ``k``-th instance of that frame in file
order. A missing instance or point is NaN (points) and 0 / ``False`` (scores, present).
Dense arrays make every finder a few vectorised numpy passes, which keeps a
10,000-frame, 10-animal file in seconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

EVENT_KINDS = (
    "identity_swap",
    "jump",
    "low_confidence",
    "track_born",
    "track_died",
    "too_many_instances",
    "implausible_length",
    "bad_frames",
)


@dataclass
class VideoData:
    """One video's predictions as dense arrays (see the module docstring for the layout)."""

    video: str  # the video's filename as the file stores it
    video_index: int  # its position in the file's video list
    frames: np.ndarray  # (F,) int64, sorted labelled frame indices
    n_frames: int | None  # the video's length when known (file metadata or the video)
    tracked: bool  # columns are tracks (True) or per-frame instance order (False)
    track_names: list[str]  # (K,) names when tracked, "" per column otherwise
    node_names: list[str]  # (N,)
    edges: list[tuple[int, int]]  # skeleton edges as node index pairs
    points: np.ndarray  # (F, K, N, 2) float64 x, y in pixels, NaN where missing
    point_scores: np.ndarray  # (F, K, N) float64, 0 where missing
    instance_scores: np.ndarray  # (F, K) float64, 0 where missing
    present: np.ndarray  # (F, K) bool, an instance is there
    embeddings: np.ndarray | None = None  # (F, K, D) re-ID vectors when the file has them
    bad_frames: list[int] = field(default_factory=list)  # frames the run could not decode
    max_tracks: int | None = None  # the run's --max-tracks / max instances when recorded
    frame_size: tuple[int, int] | None = None  # (width, height) in px when the file says

    @property
    def n_columns(self) -> int:
        return int(self.points.shape[1])


@dataclass
class Event:
    """Something in one video that is probably wrong, with how sure qc is (``score`` 0..1)."""

    kind: str  # one of EVENT_KINDS
    frame_start: int  # video frame index (sleap-io's), inclusive
    frame_end: int  # inclusive
    tracks: list[str]  # track names (or "#k" columns of an untracked file) involved
    score: float  # 0..1, how sure: the table sorts by it
    nodes: list[str] = field(default_factory=list)  # a single-node event names its node(s)
    detail: str = ""  # one short human sentence: "nose moved 48 px and back"


@dataclass
class Suggestion:
    """A frame worth labelling next: why, and how much it should help (higher first)."""

    frame: int
    reason: str  # "low_confidence", "identity_swap", "jump", "diversity", ...
    score: float


@dataclass
class VideoReport:
    """What qc found in one video of one file."""

    video: str
    frames: int  # labelled frames read
    summary: dict[str, Any]  # verdict (one line), counts per kind, flags per 1000 frames, ...
    events: list[Event] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "video": self.video,
            "frames": self.frames,
            "summary": self.summary,
            "events": [asdict(e) for e in self.events],
            "suggestions": [asdict(s) for s in self.suggestions],
        }


@dataclass
class FileReport:
    """What qc found in one prediction file."""

    path: str
    videos: list[VideoReport] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "videos": [v.to_json() for v in self.videos]}


@dataclass
class QCResult:
    """Every file of one qc run; :meth:`to_json` is the ``--json`` layout."""

    files: list[FileReport] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"files": [f.to_json() for f in self.files]}
