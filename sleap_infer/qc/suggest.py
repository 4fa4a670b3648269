"""Frames to label next: where a person's labels should teach the model the most.

A model learns least from frames it already gets right, so the ranking starts from the
model's own doubt: per frame, how low the worst animal's point scores are (a missing
point counts as a score of 0) and how many animals are missing against the video's
usual count. Events (identity swaps, jumps, low-confidence stretches ...) add their
own weight, because a swap or a jump is a frame the model got wrong even where it was
sure. Badness alone would spend all ``n`` picks on one bad stretch (twenty neighbours of
one swap teach what one of them does), so the picks are greedy with a temporal
exclusion window around each pick and a small bonus for frames far from every pick:
the list covers the video's different bad moments first, and a clean video still gets
``n`` frames spread over its length (reason ``"diversity"``). Everything is a few numpy
passes over :class:`VideoData`'s dense arrays, deterministic (ties go to the earlier
frame).

:func:`write_suggestions` puts the picks into a copy of the user's SLEAP project as
``SuggestionFrame`` rows, so the GUI's "Labeling Suggestions" list shows them. The copy
is made byte for byte and only the ``suggestions_json`` (and, when the project lacks the
predicted video, ``videos_json``) datasets are rewritten: a ``.pkg.slp``'s embedded
frames, its labels and anything a newer SLEAP stored stay exactly as they were, which a
load-and-save through sleap-io would not promise (it re-embeds or restores source
videos). The user's file is only read.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from sleap_infer.core.errors import OutputError, OutputExistsError, UsageError
from sleap_infer.core.leftovers import owner_tag, remove_stale

from .records import Event, Suggestion, VideoData

# How much an event at a frame adds to that frame's badness (times the event's own
# score): a swap or a jump is a frame the model got wrong however sure it was, so they
# weigh as much as the worst possible scores; a low-confidence stretch is already in
# the scores, so it only tips ties inside the stretch. Bad frames could not be decoded:
# nobody can label them from this video.
EVENT_WEIGHTS: dict[str, float] = {
    "identity_swap": 1.0,
    "jump": 0.9,
    "implausible_length": 0.7,
    "too_many_instances": 0.6,
    "low_confidence": 0.3,
    "track_born": 0.3,
    "track_died": 0.3,
    "bad_frames": 0.0,
}
# A frame far from every pick gains up to this much: enough to order clean frames by
# spread, too little to beat a frame that is really bad.
DIVERSITY_WEIGHT = 0.15
# The root attribute that marks a project copy as written by write_suggestions, so a
# later run may replace its own output without --overwrite (and nothing else).
OURS_ATTR = "sleap_infer_suggestions"


def frame_badness(data: VideoData) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``data``: how doubtful the model was (0 sure .. 1 lost), and its reason.

    The worst present instance's mean point doubt (``1 - score``, clipped to 0..1, a
    missing point counting as 1) and the share of animals missing against the video's
    usual count (the median of frames with any instance; a frame of the usual count or
    more scores 0 there). The larger of the two is the frame's badness; ``reason`` is
    ``"low_confidence"``, ``"missing_points"`` (the doubt comes mostly from missing
    points) or ``"missing_instances"``.
    """
    n_rows = len(data.frames)
    if n_rows == 0:
        return np.zeros(0), np.zeros(0, dtype=object)
    present = np.asarray(data.present, dtype=bool)
    scores = np.clip(np.nan_to_num(np.asarray(data.point_scores, dtype=np.float64)), 0.0, 1.0)
    missing = ~np.isfinite(np.asarray(data.points, dtype=np.float64)).all(axis=-1)
    n_nodes = scores.shape[-1]
    if n_nodes and present.shape[1]:
        doubt = np.where(present, np.where(missing, 1.0, 1.0 - scores).mean(axis=-1), 0.0)
        missing_share = np.where(present, missing.sum(axis=-1) / n_nodes, 0.0)
        worst = np.argmax(doubt, axis=1)
        rows = np.arange(n_rows)
        point_bad, point_missing = doubt[rows, worst], missing_share[rows, worst]
    else:  # no animal columns or a skeleton without nodes: only the counts can speak
        point_bad = point_missing = np.zeros(n_rows)

    counts = present.sum(axis=1)
    usual = float(np.median(counts[counts > 0])) if (counts > 0).any() else 0.0
    lacking = np.clip((usual - counts) / usual, 0.0, 1.0) if usual > 0 else np.zeros(n_rows)

    badness = np.maximum(point_bad, lacking)
    reason = np.where(
        lacking > point_bad,
        "missing_instances",
        np.where(
            (point_missing > 0) & (point_missing * 2 >= point_bad),
            "missing_points",
            "low_confidence",
        ),
    ).astype(object)
    return badness, reason


def _event_bonus(data: VideoData, events: list[Event]) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the largest ``weight(kind) * score`` of the events covering it, and that kind.

    An event spanning many frames marks all of them; which of them gets picked is then
    the scores' choice (the worst frame of a low-confidence stretch).
    """
    n_rows = len(data.frames)
    bonus = np.zeros(n_rows)
    kind = np.full(n_rows, "", dtype=object)
    frames = np.asarray(data.frames, dtype=np.int64)
    # Strongest last, so it wins where events overlap; sorted stably for determinism.
    weighted = sorted(
        (EVENT_WEIGHTS.get(e.kind, 0.5) * float(np.clip(e.score, 0.0, 1.0)), i, e)
        for i, e in enumerate(events)
    )
    for value, _, event in weighted:
        if value <= 0:
            continue
        lo = int(np.searchsorted(frames, min(event.frame_start, event.frame_end), "left"))
        hi = int(np.searchsorted(frames, max(event.frame_start, event.frame_end), "right"))
        span = slice(lo, hi)
        better = bonus[span] < value
        bonus[span] = np.where(better, value, bonus[span])
        kind[span] = np.where(better, event.kind, kind[span])
    return bonus, kind


def exclusion_radius(frames: np.ndarray, n: int) -> int:
    """Frames within this distance of a pick are not picked again: a quarter of the even
    spacing of ``n`` picks over the labelled span (at least 2), so one bad stretch gets a
    few picks, not all of them, and a long video's picks are not shoulder to shoulder."""
    if len(frames) < 2 or n < 1:
        return 2
    span = int(frames[-1] - frames[0]) + 1
    return max(2, span // (4 * n))


def suggest_frames(data: VideoData, events: list[Event], n: int) -> list[Suggestion]:
    """The ``n`` frames of one video whose labels should help the model most, best first.

    ``score`` is badness (0..1, :func:`frame_badness`) plus the strongest event's weight
    at that frame plus a spread bonus (up to :data:`DIVERSITY_WEIGHT`), at the time the
    frame was picked, so it never rises down the list. ``reason`` names what dominated:
    an event kind, ``"low_confidence"``, ``"missing_points"``, ``"missing_instances"``,
    or ``"diversity"`` for a frame picked mostly for where it is. Only frames the file
    has predictions for are candidates (a frame outside them may be outside the run's
    ``--frames``), minus the frames the run could not decode. Fewer than ``n`` come back
    when the exclusion window leaves no more candidates.
    """
    if n < 0:
        raise UsageError(f"--suggest must be 0 or more, got {n}")
    frames = np.asarray(data.frames, dtype=np.int64)
    if n == 0 or len(frames) == 0:
        return []
    badness, bad_reason = frame_badness(data)
    bonus, event_kind = _event_bonus(data, events)
    base = badness + bonus
    candidate = ~np.isin(frames, np.asarray(sorted(set(data.bad_frames)), dtype=np.int64))

    radius = exclusion_radius(frames, n)
    spacing = max(1.0, (frames[-1] - frames[0] + 1) / n)
    # Distance to the nearest pick, in units of the even spacing (capped at 1): before
    # the first pick every frame is equally far.
    far = np.ones(len(frames))
    picks: list[Suggestion] = []
    while len(picks) < n and candidate.any():
        total = np.where(candidate, base + DIVERSITY_WEIGHT * far, -np.inf)
        row = int(np.argmax(total))
        frame = int(frames[row])
        if bonus[row] > 0 and bonus[row] >= badness[row]:
            reason = str(event_kind[row])
        elif badness[row] > 0 and badness[row] >= DIVERSITY_WEIGHT * far[row]:
            reason = str(bad_reason[row])
        else:
            reason = "diversity"
        picks.append(Suggestion(frame=frame, reason=reason, score=round(float(total[row]), 4)))
        distance = np.abs(frames - frame)
        candidate &= distance > radius
        far = np.minimum(far, distance / spacing)
    return picks


# ---------------------------------------------------------------------------------------
# Writing them into a copy of the user's project


def _names(video: Any) -> list[str]:
    """Every filename a project video answers to: its own, and for a video embedded in a
    ``.pkg.slp`` the source video it was taken from (what sleap-io matches embedded
    videos by)."""
    names = [video.filename] if isinstance(video.filename, str) else []
    source = getattr(video, "source_video", None)
    while source is not None:
        if isinstance(source.filename, str):
            names.append(source.filename)
        source = getattr(source, "source_video", None)
    backend_source = getattr(getattr(video, "backend", None), "source_filename", None)
    if isinstance(backend_source, str):
        names.append(backend_source)
    return [n for n in names if n and n != "."]


def match_video(videos: list[Any], filename: str) -> int | None:
    """The index in ``videos`` of the project video ``filename`` names, as sleap-io's
    path matching does it: the same path first, else the only video with the same
    basename (sleap-io's ``Video.matches_path`` non-strict rung). Several videos sharing
    the basename and none the path is ambiguous: refused, naming them."""
    want = Path(filename).as_posix()
    for i, video in enumerate(videos):
        if any(Path(n).as_posix() == want for n in _names(video)):
            return i
    base = Path(filename).name
    same = [i for i, video in enumerate(videos) if any(Path(n).name == base for n in _names(video))]
    if len(same) > 1:
        raise UsageError(
            f"{filename}: {len(same)} videos of the project are named {base} "
            f"(videos {', '.join(str(i) for i in same)}); "
            "cannot tell which one the suggestions are for"
        )
    return same[0] if same else None


def _is_ours(path: Path) -> bool:
    """Whether ``path`` is a project copy written by :func:`write_suggestions`."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return bool(f.attrs.get(OURS_ATTR, False))
    except (OSError, ValueError):
        return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def _new_video_entry(filename: str) -> bytes:
    """The ``videos_json`` row sleap-io writes for a video file it can (or cannot) open:
    its shape when the file is there, so the GUI can size the view before decoding."""
    import sleap_io as sio
    from sleap_io.io.slp import video_to_dict

    path = Path(filename)
    video = None
    if path.is_file():
        with contextlib.suppress(Exception):
            video = sio.Video.from_filename(str(path))
    if video is None:
        video = sio.Video(filename=filename, open_backend=False)
    try:
        entry = video_to_dict(video)
    finally:
        with contextlib.suppress(Exception):
            video.close()
    return json.dumps(entry, separators=(",", ":")).encode("utf-8")


def write_suggestions(
    into: Path,
    output: Path,
    suggestions: dict[str, list[Suggestion]],
    overwrite: bool = False,
) -> dict[str, int]:
    """Copy the project ``into`` to ``output`` with ``suggestions`` added.

    ``suggestions`` maps a video filename (as the prediction file stores it) to its
    frames. A video is matched to the project's by :func:`match_video`; one the project
    lacks is added at the end of its video list (existing indices, which the project's
    frames point at, stay). The project's own suggestions are kept and a frame already
    suggested is not added twice. ``output`` may never be ``into``; an existing
    ``output`` is replaced only when it is an earlier copy of ours or ``overwrite`` is
    given. The copy is written to a temporary sibling and renamed, so a failed run
    leaves no half file. Returns ``{"added": ..., "already": ..., "videos_added": ...}``.
    """
    import h5py
    import sleap_io as sio

    into, output = Path(into), Path(output)
    if not into.is_file():
        raise UsageError(f"--into {into}: no such SLEAP project file")
    if output.exists() and _same_file(into, output):
        raise UsageError(f"-o {output}: is the project given to --into; write the copy elsewhere")
    if output.exists() and not overwrite and not _is_ours(output):
        raise OutputExistsError(
            f"-o {output}: exists and is not a copy written by infer qc; "
            "pass --overwrite to replace it"
        )
    try:
        project = sio.load_slp(str(into), open_videos=False)
    except Exception as exc:  # sleap-io raises whatever h5py or json raised
        raise UsageError(f"--into {into}: not a readable SLEAP project ({exc})") from exc
    videos = list(project.videos)
    # What is already suggested, by (video index, frame): kept, never duplicated.
    by_id = {id(v): i for i, v in enumerate(videos)}
    taken = {(by_id.get(id(s.video), -1), int(s.frame_idx)) for s in project.suggestions}

    new_videos: list[str] = []
    rows: list[bytes] = []
    added = already = 0
    for filename in sorted(suggestions):
        if not suggestions[filename]:
            continue  # a video with nothing to suggest is not added to the project
        index = match_video(videos, filename)
        if index is None:
            if filename in new_videos:
                index = len(videos) + new_videos.index(filename)
            else:
                new_videos.append(filename)
                index = len(videos) + len(new_videos) - 1
        for s in suggestions[filename]:
            key = (index, int(s.frame))
            if key in taken:
                already += 1
                continue
            taken.add(key)
            added += 1
            row = {"video": str(index), "frame_idx": int(s.frame), "group": 0}
            rows.append(json.dumps(row, separators=(",", ":")).encode("utf-8"))

    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.{owner_tag()}.tmp")
    remove_stale(output.parent, f".{output.name}.", ".tmp")  # left by killed runs
    try:
        shutil.copyfile(into, tmp)
        with h5py.File(tmp, "r+") as f:
            if new_videos:
                old = [bytes(r) for r in f["videos_json"][()]] if "videos_json" in f else []
                _rewrite_rows(f, "videos_json", old + [_new_video_entry(v) for v in new_videos])
            old = [bytes(r) for r in f["suggestions_json"][()]] if "suggestions_json" in f else []
            _rewrite_rows(f, "suggestions_json", old + rows)
            f.attrs[OURS_ATTR] = True
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        if output.exists() and not overwrite and not _is_ours(output):
            raise OutputExistsError(f"-o {output}: a file that is not ours appeared there; kept it")
        os.replace(tmp, output)
    except OSError as exc:
        raise OutputError(
            f"-o {output}: cannot write the project copy ({exc.strerror or exc})"
        ) from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return {"added": added, "already": already, "videos_added": len(new_videos)}


def _rewrite_rows(f: Any, name: str, rows: list[bytes]) -> None:
    """Replace the JSON-rows dataset ``name`` as sleap-io writes one (variable-length
    UTF-8 strings, resizable). An empty list is written as sleap-io writes no
    suggestions: an empty dataset of that type."""
    import h5py

    if name in f:
        del f[name]
    data = np.array([r.decode("utf-8") for r in rows], dtype=object)
    f.create_dataset(name, data=data, dtype=h5py.string_dtype(), maxshape=(None,))
