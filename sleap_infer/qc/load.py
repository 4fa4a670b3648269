"""Read a prediction ``.slp`` (ours, sleap-nn's or SLEAP's) into dense per-video arrays.

qc reads files it did not write, so it goes through sleap-io (the loader SLEAP 1.6 and
sleap-nn use) instead of our writers' layout, and reads our own extras (re-ID vectors,
the run's provenance: bad frames, ``--max-tracks``) only when they are there.

User-labelled instances count as present with score 1: a person placed them, so they
are the most trusted points in the file; a predicted instance a user instance was made
from (``from_predicted``) is dropped in that frame, as SLEAP shows only the user's.
In a tracked file, instances without a track get their own columns after the tracks,
named ``(untracked)#j`` (the j-th of its frame), so counts per frame stay true while
the per-track finders leave them out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from sleap_infer.core.errors import SleapInferError

from .records import VideoData

UNTRACKED_PREFIX = "(untracked)#"


class QCInputError(SleapInferError):
    """A file qc cannot read as predictions (missing, not an .slp, no videos)."""


def _provenance(path: Path) -> dict[str, Any]:
    """Our provenance record (``metadata`` attrs JSON), or ``{}`` for other writers'."""
    try:
        with h5py.File(path, "r") as f:
            if "metadata" not in f or "json" not in f["metadata"].attrs:
                return {}
            raw = f["metadata"].attrs["json"]
    except OSError as exc:
        raise QCInputError(f"{path}: not an .slp file (HDF5: {exc})") from None
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    try:
        found = json.loads(text).get("provenance")
    except (ValueError, AttributeError):
        return {}
    return found if isinstance(found, dict) else {}


def _bad_frames(prov: dict[str, Any]) -> list[int]:
    """Frame indices the run recorded as undecodable, one entry per frame."""
    out: list[int] = []
    for entry in prov.get("bad_frames") or []:
        try:
            start, count = int(entry["frame_idx"]), int(entry.get("count", 1))
        except (KeyError, TypeError, ValueError):
            continue
        out.extend(range(start, start + max(count, 1)))
    return out


def _max_tracks(prov: dict[str, Any]) -> int | None:
    """The run's ``--max-tracks`` (or, untracked, ``--max-instances``) when recorded."""
    options = prov.get("options") or {}
    tracking = prov.get("tracking") or {}
    groups = [(tracking.get("options") if isinstance(tracking, dict) else None) or {}, options]
    for key in ("max_tracks", "max_instances"):
        for group in groups:
            value = group.get(key) if isinstance(group, dict) else None
            if isinstance(value, int) and value > 0:
                return value
    return None


def _n_frames(video: Any, prov: dict[str, Any]) -> int | None:
    """The video's length from the file's metadata (sleap-io keeps the shape), else the
    run's record; None when neither says."""
    shape = (getattr(video, "backend_metadata", None) or {}).get("shape")
    if shape:
        return int(shape[0])
    value = prov.get("frames_in_metadata")
    return int(value) if isinstance(value, int) and value > 0 else None


def _frame_size(video: Any) -> tuple[int, int] | None:
    """(width, height) from the shape sleap-io keeps, None when the file does not say."""
    shape = (getattr(video, "backend_metadata", None) or {}).get("shape")
    if shape and len(shape) >= 3 and shape[1] and shape[2]:
        return int(shape[2]), int(shape[1])
    return None


def load_videos(path: str | Path) -> list[VideoData]:
    """One :class:`VideoData` per video of the ``.slp`` at ``path`` that has labelled frames.

    Raises :class:`QCInputError` (one line) for a missing, unreadable or non-.slp file.
    """
    import sleap_io as sio

    path = Path(path)
    if not path.is_file():
        raise QCInputError(f"{path}: no such file")
    if path.suffix.lower() != ".slp":
        raise QCInputError(f"{path}: not an .slp file (qc reads SLEAP/sleap-nn .slp predictions)")
    if path.stat().st_size == 0:
        raise QCInputError(f"{path}: empty file")
    prov = _provenance(path)
    try:
        lazy = sio.load_slp(str(path), open_videos=False, lazy=True)
        fast = None if _has_embeddings(path) else _from_tables(lazy, prov)
        if fast is not None:
            return fast
        labels = sio.load_slp(str(path), open_videos=False)
    except QCInputError:
        raise
    except Exception as exc:  # sleap-io raises many kinds on a damaged file
        raise QCInputError(f"{path}: cannot read as .slp ({type(exc).__name__}: {exc})") from None
    if not labels.skeletons:
        raise QCInputError(f"{path}: no skeleton: not a predictions file")
    by_video: dict[int, list[Any]] = {}
    video_ids = {id(v): i for i, v in enumerate(labels.videos)}
    for lf in labels.labeled_frames:
        by_video.setdefault(video_ids.get(id(lf.video), -1), []).append(lf)
    bad = _bad_frames(prov)
    max_tracks = _max_tracks(prov)
    out = []
    for vi, video in enumerate(labels.videos):
        frames = by_video.get(vi)
        if frames:
            out.append(_dense(labels, video, vi, frames, bad if vi == 0 else [], max_tracks, prov))
    return out


def _has_embeddings(path: Path) -> bool:
    """Whether the file stores re-ID vectors (read through sleap-io's objects)."""
    with h5py.File(path, "r") as f:
        return "embeddings" in f


def _from_tables(labels: Any, prov: dict[str, Any]) -> list[VideoData] | None:
    """:func:`load_videos` from the lazily loaded file's tables, vectorised.

    Building sleap-io's objects costs about 2 s per 10,000 instances (20 s for a
    10,000-frame, 10-animal file); the tables sleap-io's lazy loader keeps
    (``frames``, ``instances``, ``points``, ``pred_points``, as the .slp stores them)
    give the same arrays in well under a second. None where the file does not fit
    this path (no lazy store, several skeletons): the caller reads it object by object.
    """
    store = getattr(labels, "_lazy_store", None)
    if store is None or len(labels.skeletons) != 1:
        return None
    skeleton = labels.skeletons[0]
    n_nodes = len(skeleton.nodes)
    frames = np.asarray(store.frames_data)
    insts = np.asarray(store.instances_data)
    if frames.size == 0:
        return []
    row_of_id = {int(fid): r for r, fid in enumerate(frames["frame_id"])}
    if insts.size:
        if np.any(insts["point_id_end"] - insts["point_id_start"] != n_nodes):
            return None
        inst_row = np.array([row_of_id[int(i)] for i in insts["frame_id"]], dtype=np.int64)
    else:
        inst_row = np.zeros(0, dtype=np.int64)
    user = insts["instance_type"] == 0
    replaced = np.isin(
        insts["instance_id"], insts["from_predicted"][user & (insts["from_predicted"] >= 0)]
    )
    keep = user | ~replaced
    insts, inst_row, user = insts[keep], inst_row[keep], user[keep]
    shift = 0.5 if float(store.format_id) < 1.1 else 0.0
    offsets = insts["point_id_start"].astype(np.int64)[:, None] + np.arange(n_nodes)
    xy = np.full((len(insts), n_nodes, 2), np.nan)
    pscore = np.zeros((len(insts), n_nodes))
    for mask, table in ((user, store.points_data), (~user, store.pred_points_data)):
        if not mask.any():
            continue
        pts = np.asarray(table)[offsets[mask]]
        visible = pts["visible"].astype(bool) & np.isfinite(pts["x"]) & np.isfinite(pts["y"])
        xy[mask, :, 0] = np.where(visible, pts["x"] - shift, np.nan)
        xy[mask, :, 1] = np.where(visible, pts["y"] - shift, np.nan)
        sc = pts["score"] if "score" in (pts.dtype.names or ()) else np.ones(pts.shape)
        pscore[mask] = np.where(visible, np.nan_to_num(sc.astype(np.float64)), 0.0)
    iscore = np.where(user, 1.0, np.nan_to_num(insts["score"].astype(np.float64)))
    track_names = [t.name for t in labels.tracks]
    bad = _bad_frames(prov)
    max_tracks = _max_tracks(prov)
    out = []
    edges = [
        (skeleton.nodes.index(e.source), skeleton.nodes.index(e.destination))
        for e in skeleton.edges
    ]
    for vi, video in enumerate(labels.videos):
        rows = np.flatnonzero(frames["video"] == vi)
        if rows.size == 0:
            continue
        rows = rows[np.argsort(frames["frame_idx"][rows], kind="stable")]
        dense_of_row = np.full(len(frames), -1, dtype=np.int64)
        dense_of_row[rows] = np.arange(rows.size)
        sel = np.flatnonzero(dense_of_row[inst_row] >= 0)
        f_of = dense_of_row[inst_row[sel]]
        trk = insts["track"][sel].astype(np.int64)
        used = np.unique(trk[trk >= 0])
        tracked = used.size > 0
        col = np.full(sel.size, -1, dtype=np.int64)
        loose = (trk < 0) if tracked else np.ones(sel.size, dtype=bool)
        if tracked:
            col[~loose] = np.searchsorted(used, trk[~loose])
        # the j-th loose instance of its frame, in file order, after the tracks
        order = np.flatnonzero(loose)
        order = order[np.argsort(f_of[order], kind="stable")]
        if order.size:
            fo = f_of[order]
            first = np.r_[0, np.flatnonzero(np.diff(fo)) + 1]
            starts = np.repeat(first, np.diff(np.r_[first, fo.size]))
            col[order] = used.size + np.arange(order.size) - starts
        extra = int(col.max() + 1 - used.size) if (col.size and loose.any()) else 0
        n_cols = used.size + max(extra, 0)
        # one instance per (frame, column): the first in file order
        flat = f_of * max(n_cols, 1) + col
        _, first_idx = np.unique(flat, return_index=True)
        take = sel[first_idx]
        f_t, c_t = f_of[first_idx], col[first_idx]
        n_f = rows.size
        points = np.full((n_f, n_cols, n_nodes, 2), np.nan)
        pscores = np.zeros((n_f, n_cols, n_nodes))
        iscores = np.zeros((n_f, n_cols))
        present = np.zeros((n_f, n_cols), dtype=bool)
        points[f_t, c_t] = xy[take]
        pscores[f_t, c_t] = pscore[take]
        iscores[f_t, c_t] = iscore[take]
        present[f_t, c_t] = True
        if tracked:
            names = [track_names[t] for t in used] + [
                f"{UNTRACKED_PREFIX}{j}" for j in range(extra)
            ]
        else:
            names = [""] * n_cols
        out.append(
            VideoData(
                video=str(video.filename),
                video_index=vi,
                frames=frames["frame_idx"][rows].astype(np.int64),
                n_frames=_n_frames(video, prov),
                tracked=tracked,
                track_names=names,
                node_names=[n.name for n in skeleton.nodes],
                edges=edges,
                points=points,
                point_scores=pscores,
                instance_scores=iscores,
                present=present,
                embeddings=None,
                bad_frames=bad if vi == 0 else [],
                max_tracks=max_tracks,
                frame_size=_frame_size(video),
            )
        )
    return out


def _kept(lf: Any) -> list[Any]:
    """The instances qc reads in one frame: user ones, and predictions no user one replaced."""
    import sleap_io as sio

    insts = list(lf.instances)
    replaced = {
        id(i.from_predicted) for i in insts if getattr(i, "from_predicted", None) is not None
    }
    return [i for i in insts if not (isinstance(i, sio.PredictedInstance) and id(i) in replaced)]


def _dense(
    labels: Any,
    video: Any,
    vi: int,
    lfs: list[Any],
    bad: list[int],
    max_tracks: int | None,
    prov: dict[str, Any],
) -> VideoData:
    """The arrays of one video (see :mod:`.records` for the layout)."""
    import sleap_io as sio

    skeleton = labels.skeletons[0]
    node_names = [n.name for n in skeleton.nodes]
    index = {n: k for k, n in enumerate(skeleton.nodes)}
    edges = [(index[e.source], index[e.destination]) for e in skeleton.edges]
    n_nodes = len(node_names)
    lfs = sorted(lfs, key=lambda lf: int(lf.frame_idx))
    frames = np.array([int(lf.frame_idx) for lf in lfs], dtype=np.int64)
    kept = [_kept(lf) for lf in lfs]
    track_order = {id(t): k for k, t in enumerate(labels.tracks)}
    used = sorted({track_order[id(i.track)] for ins in kept for i in ins if i.track is not None})
    tracked = bool(used)
    column_of = {id(labels.tracks[t]): c for c, t in enumerate(used)}
    extra = max((sum(1 for i in ins if not tracked or i.track is None) for ins in kept), default=0)
    n_cols = len(used) + extra
    n_f = len(lfs)
    points = np.full((n_f, n_cols, n_nodes, 2), np.nan)
    pscores = np.zeros((n_f, n_cols, n_nodes))
    iscores = np.zeros((n_f, n_cols))
    present = np.zeros((n_f, n_cols), dtype=bool)
    emb: dict[tuple[int, int], np.ndarray] = {}
    for f, ins in enumerate(kept):
        loose = len(used)
        for inst in ins:
            if tracked and inst.track is not None:
                c = column_of[id(inst.track)]
                if present[f, c]:  # two instances of one track in a frame: keep the first
                    continue
            else:
                c, loose = loose, loose + 1
            pts = np.asarray(inst.numpy(), dtype=np.float64)[:, :2]
            points[f, c] = pts
            present[f, c] = True
            visible = ~np.isnan(pts).any(axis=1)
            if isinstance(inst, sio.PredictedInstance):
                sc = np.asarray(inst.numpy(scores=True), dtype=np.float64)[:, 2]
                pscores[f, c] = np.where(visible, np.nan_to_num(sc), 0.0)
                iscores[f, c] = float(inst.score or 0.0)
            else:
                pscores[f, c] = visible.astype(np.float64)
                iscores[f, c] = 1.0
            vec = getattr(inst, "identity_embedding", None)
            vec = getattr(vec, "vector", vec)  # sleap-io 0.9 wraps it in an Embedding
            if vec is not None:
                emb[(f, c)] = np.asarray(vec, dtype=np.float64).ravel()
    embeddings = None
    if emb:
        dim = max(v.size for v in emb.values())
        embeddings = np.full((n_f, n_cols, dim), np.nan)
        for (f, c), vec in emb.items():
            embeddings[f, c, : vec.size] = vec
    names = [labels.tracks[t].name for t in used] if tracked else [""] * n_cols
    if tracked:
        names += [f"{UNTRACKED_PREFIX}{j}" for j in range(extra)]
    return VideoData(
        video=str(video.filename),
        video_index=vi,
        frames=frames,
        n_frames=_n_frames(video, prov),
        tracked=tracked,
        track_names=names,
        node_names=node_names,
        edges=edges,
        points=points,
        point_scores=pscores,
        instance_scores=iscores,
        present=present,
        embeddings=embeddings,
        bad_frames=bad,
        max_tracks=max_tracks,
        frame_size=_frame_size(video),
    )
