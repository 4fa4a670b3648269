"""The smaller checks: tracks born or dying mid-arena, more instances than the run
allowed, bodies of implausible length, and the frames the run could not decode.

* ``track_born`` / ``track_died``: a track starting after the first labelled frame (or
  ending before the last) away from the arena's edge, where animals do not appear or
  vanish: the tracker lost one (fragmented identity). The arena is the video frame when
  the file records its size, else the box around every point of the video; "away" is
  more than ``EDGE_FRACTION`` of its shorter side and more than one body size.
* ``too_many_instances``: frames holding more instances than the run's recorded
  ``--max-tracks`` (or ``--max-instances``); skipped when the file does not record one.
* ``implausible_length``: an edge whose length is off the file's median for that edge
  by more than ``LENGTH_FACTOR`` times (either way) and ``K_SIGMA`` robust sigmas of the
  log ratio. Frames already reported as a jump of that track are left out (a node that
  jumped stretches its edges: one finding, one event).
* ``bad_frames``: the frames the run recorded as undecodable (our files only).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .motion import (
    body_size,
    centroids,
    label,
    motion_columns,
    nanmedian,
    robust_sigma,
    runs,
    sureness,
)
from .records import Event, VideoData

EDGE_FRACTION = 0.1
LENGTH_FACTOR = 1.8
K_SIGMA = 6.0
MARGIN_FRAMES = 2


def find_births_deaths(data: VideoData) -> list[Event]:
    cols = motion_columns(data)
    if not data.tracked or len(data.frames) < 2 * MARGIN_FRAMES + 2:
        return []
    c = centroids(data)
    if data.frame_size:
        x0, y0, x1, y1 = 0.0, 0.0, float(data.frame_size[0]), float(data.frame_size[1])
    else:
        xs, ys = data.points[..., 0], data.points[..., 1]
        if not np.isfinite(xs).any():
            return []
        x0, x1 = float(np.nanmin(xs)), float(np.nanmax(xs))
        y0, y1 = float(np.nanmin(ys)), float(np.nanmax(ys))
    margin = max(EDGE_FRACTION * min(x1 - x0, y1 - y0), body_size(data))
    first, last = int(data.frames[0]), int(data.frames[-1])
    events = []
    for k in cols:
        rows = np.flatnonzero(data.present[:, k])
        if rows.size == 0:
            continue
        for kind, row, ends_at in (
            ("track_born", rows[0], first),
            ("track_died", rows[-1], last),
        ):
            frame = int(data.frames[row])
            if abs(frame - ends_at) <= MARGIN_FRAMES:
                continue
            x, y = c[row, k]
            edge = min(x - x0, x1 - x, y - y0, y1 - y)
            if not np.isfinite(edge) or edge <= margin:
                continue
            verb = "starts" if kind == "track_born" else "ends"
            events.append(
                Event(
                    kind=kind,
                    frame_start=frame,
                    frame_end=frame,
                    tracks=[label(data, k)],
                    score=float(sureness(edge / margin)),
                    detail=f"track {verb} {edge:.0f} px from the arena's edge",
                )
            )
    return sorted(events, key=lambda e: e.frame_start)


def find_too_many(data: VideoData) -> list[Event]:
    if not data.max_tracks:
        return []
    counts = data.present.sum(axis=1)
    events = []
    for s, e in runs(counts > data.max_tracks):
        most = int(counts[s : e + 1].max())
        events.append(
            Event(
                kind="too_many_instances",
                frame_start=int(data.frames[s]),
                frame_end=int(data.frames[e]),
                tracks=[],
                score=1.0,
                detail=f"up to {most} instances where the run allowed {data.max_tracks}",
            )
        )
    return events


def find_implausible_lengths(data: VideoData, skip: Sequence[Event] = ()) -> list[Event]:
    if not data.edges or not data.present.any():
        return []
    src = np.array([i for i, _ in data.edges])
    dst = np.array([j for _, j in data.edges])
    lengths = np.linalg.norm(data.points[:, :, src] - data.points[:, :, dst], axis=-1)
    lengths[lengths <= 0] = np.nan
    typical = nanmedian(lengths.reshape(-1, len(src)), axis=0)  # (E,)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_ratio = np.log(lengths / typical)
    sigma = robust_sigma(log_ratio.reshape(-1, len(src)), axis=0)
    limit = np.maximum(K_SIGMA * np.nan_to_num(sigma), np.log(LENGTH_FACTOR))
    with np.errstate(invalid="ignore"):
        off = np.abs(log_ratio) / limit  # (F, K, E)
    bad = np.nan_to_num(off) > 1.0
    row_of = {int(f): r for r, f in enumerate(data.frames)}
    names = {label(data, k): k for k in range(data.n_columns)}
    for ev in skip:
        for t in ev.tracks:
            if t in names and ev.frame_start in row_of:
                bad[row_of[ev.frame_start], names[t]] = False
    events = []
    for k in range(data.n_columns):
        per_row = bad[:, k].any(axis=1)
        for s, e in runs(per_row):
            chunk = np.nan_to_num(off[s : e + 1, k])
            edge = int(np.argmax(chunk.max(axis=0)))
            i, j = data.edges[edge]
            ratio = float(np.exp(np.nanmax(np.abs(log_ratio[s : e + 1, k, edge]))))
            longer = np.nanmax(log_ratio[s : e + 1, k, edge]) > 0
            events.append(
                Event(
                    kind="implausible_length",
                    frame_start=int(data.frames[s]),
                    frame_end=int(data.frames[e]),
                    tracks=[label(data, k)],
                    score=float(sureness(float(chunk.max()))),
                    nodes=[data.node_names[i], data.node_names[j]],
                    detail=f"{data.node_names[i]}-{data.node_names[j]} {ratio:.1f}x "
                    f"{'longer' if longer else 'shorter'} than typical",
                )
            )
    return sorted(events, key=lambda e: e.frame_start)


def find_bad_frames(data: VideoData) -> list[Event]:
    if not data.bad_frames:
        return []
    frames = np.unique(np.asarray(data.bad_frames, dtype=np.int64))
    breaks = np.flatnonzero(np.diff(frames) > 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [len(frames) - 1]])
    return [
        Event(
            kind="bad_frames",
            frame_start=int(frames[s]),
            frame_end=int(frames[e]),
            tracks=[],
            score=1.0,
            detail=f"{e - s + 1} frame{'s' if e > s else ''} the run could not decode",
        )
        for s, e in zip(starts, ends, strict=True)
    ]
