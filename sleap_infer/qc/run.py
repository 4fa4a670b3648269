"""One qc run: read each file, find its events, rank frames to label, summarise.

Files are independent: a file that cannot be read is reported through ``on_error``
(the CLI prints its one line and goes on) or raised (the Python API), and the others
are still checked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .confidence import find_low_confidence
from .extras import find_bad_frames, find_births_deaths, find_implausible_lengths, find_too_many
from .jumps import find_jumps
from .load import QCInputError, load_videos
from .motion import motion_columns, nanmean
from .records import EVENT_KINDS, Event, FileReport, QCResult, VideoData, VideoReport
from .swaps import find_swaps

# How much one event of a kind weighs in a video's severity (events per 1000 frames,
# weighted by score): a swap corrupts every frame after it, a jump one frame.
SEVERITY_WEIGHT = {
    "identity_swap": 5.0,
    "jump": 1.0,
    "low_confidence": 2.0,
    "track_born": 1.0,
    "track_died": 1.0,
    "too_many_instances": 1.0,
    "implausible_length": 0.5,
    "bad_frames": 2.0,
}
_NOUNS = {
    "identity_swap": ("likely identity swap", "likely identity swaps"),
    "jump": ("jump", "jumps"),
    "track_born": ("track born mid-arena", "tracks born mid-arena"),
    "track_died": ("track lost mid-arena", "tracks lost mid-arena"),
    "too_many_instances": ("stretch over the track limit", "stretches over the track limit"),
    "implausible_length": ("implausible body length", "implausible body lengths"),
    "bad_frames": ("undecodable stretch", "undecodable stretches"),
}


def find_events(data: VideoData) -> list[Event]:
    """Every event in one video, sorted by frame."""
    swaps = find_swaps(data)
    # a swap and its swap back the next frame is also both tracks' one-frame jump: one event
    swapped = {(e.frame_start, t) for e in swaps for t in e.tracks}
    jumps = [e for e in find_jumps(data) if e.nodes or (e.frame_start, e.tracks[0]) not in swapped]
    events = (
        swaps
        + jumps
        + find_low_confidence(data)
        + find_births_deaths(data)
        + find_too_many(data)
        + find_implausible_lengths(data, skip=jumps)
        + find_bad_frames(data)
    )
    return sorted(events, key=lambda e: (e.frame_start, EVENT_KINDS.index(e.kind)))


def summarise(data: VideoData, events: Sequence[Event]) -> dict[str, Any]:
    """The summary keys the report shows (see :class:`~.records.VideoReport`)."""
    n_f = len(data.frames)
    counts = Counter(e.kind for e in events)
    per_1000 = 1000.0 * len(events) / max(n_f, 1)
    low_rows = np.zeros(n_f, dtype=bool)
    row_of = {int(f): r for r, f in enumerate(data.frames)}
    for e in events:
        if e.kind == "low_confidence":
            low_rows[row_of[e.frame_start] : row_of[e.frame_end] + 1] = True
    low_share = float(low_rows.mean()) if n_f else 0.0
    severity = sum(SEVERITY_WEIGHT[e.kind] * max(e.score, 0.1) for e in events)
    severity = 1000.0 * severity / max(n_f, 1) + 100.0 * low_share
    present = data.present
    scores = data.point_scores[present]
    visible = np.isfinite(data.points[present]).all(axis=-1)
    parts = []
    for kind in EVENT_KINDS:
        n = counts.get(kind, 0)
        if n and kind in _NOUNS:
            one, many = _NOUNS[kind]
            parts.append(f"{n} {one if n == 1 else many}")
    verdict = ", ".join(parts) if parts else "no events"
    if low_share:
        verdict += f"; {100 * low_share:.0f}% of frames low confidence"
    if not present.any():
        verdict = "no instances"
    return {
        "verdict": verdict,
        "severity": round(float(severity), 3),
        "counts": {k: int(counts.get(k, 0)) for k in EVENT_KINDS},
        "flags_per_1000": round(per_1000, 3),
        "tracks": len(motion_columns(data)) if data.tracked else 0,
        "mean_score": round(float(nanmean(scores)), 4) if scores.size else 0.0,
        "missing_points": round(float(1.0 - visible.mean()), 4) if visible.size else 0.0,
        "frames_with_instances": int(present.any(axis=1).sum()),
    }


def check_video(data: VideoData, suggest: int = 0) -> VideoReport:
    """Events, summary and (``suggest`` > 0) frames to label for one video."""
    events = find_events(data)
    suggestions = []
    if suggest > 0:
        from .suggest import suggest_frames

        suggestions = suggest_frames(data, events, suggest)
    return VideoReport(
        video=data.video,
        frames=len(data.frames),
        summary=summarise(data, events),
        events=events,
        suggestions=suggestions,
    )


def run_qc(
    paths: Iterable[str | Path],
    *,
    suggest: int = 0,
    on_error: Callable[[Path, QCInputError], None] | None = None,
) -> tuple[QCResult, list[list[VideoData]]]:
    """Check every file of ``paths``; ``data[i][j]`` are the arrays of
    ``result.files[i].videos[j]``. A file that cannot be read raises
    :class:`~.load.QCInputError` unless ``on_error`` is given (then it is left out of
    the result and the next file is checked)."""
    result = QCResult()
    data: list[list[VideoData]] = []
    seen: set[Path] = set()
    for path in map(Path, paths):
        if path.resolve() in seen:  # `qc a.slp *.slp`: one report per file, not two
            continue
        seen.add(path.resolve())
        try:
            videos = load_videos(path)
        except QCInputError as exc:
            if on_error is None:
                raise
            on_error(path, exc)
            continue
        result.files.append(
            FileReport(path=str(path), videos=[check_video(v, suggest) for v in videos])
        )
        data.append(videos)
    return result, data


def qc(path_or_paths: str | Path | Sequence[str | Path], suggest: int = 0) -> QCResult:
    """The qc records of one prediction file or several (``sleap_infer.qc``): events per
    video, a summary, and with ``suggest`` > 0 that many frames to label next.

    Raises :class:`~.load.QCInputError` (one line) for a file it cannot read.
    """
    paths = [path_or_paths] if isinstance(path_or_paths, (str, Path)) else list(path_or_paths)
    return run_qc(paths, suggest=suggest)[0]
