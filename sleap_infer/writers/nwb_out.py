"""NWB predictions (``--format nwb``) with ndx-pose, in the layout ``sio.load_nwb`` reads.

NWB stores one ``PoseEstimation`` per track (``track=<name>``, one
``PoseEstimationSeries`` per node) in the processing module
``SLEAP_VIDEO_000_<video stem>``, and the skeleton in ``behavior/Skeletons``.
sleap-io 0.9's writer files every untracked instance under one track
``untracked``, so any frame with two untracked animals failed (a pandas
"duplicate entries" error), and it refused an empty result. Here the tracks
are the slots of :mod:`sleap_infer.writers.slots`: real identities for
multi-class models, else per-frame score ranks whose ``description`` says they
are not identities. With nothing predicted the file still holds one empty
track, so readers find the skeleton.

The series are built from the journal's arrays (x, y and score per point
occupied by a track), not from a per-point table as sleap-io does; all
series of a track share one timestamps dataset (``frame_idx / fps``).

Every predicted frame is in the file, those where nothing was found too: each
track's series has a timestamp for every predicted frame, NaN where the track has
no instance (as NWB marks a missing pose), so a reader's time axis is the frames
that were predicted, as in sleap-nn's ``.slp``. With ``--no-empty-frames`` a
track's series holds only the frames it occupies.
"""

from __future__ import annotations

import json
import uuid
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from ndx_pose import PoseEstimation, PoseEstimationSeries, Skeleton, Skeletons
from pynwb import NWBHDF5IO, NWBFile
from pynwb.device import Device

import sleap_infer
from sleap_infer.writers.slots import Source, slotted_batches, track_axis

REFERENCE_FRAME = (
    "(x, y) in pixels from the top-left of the frame; the centre of the top-left pixel is (0, 0)"
)


@dataclass(frozen=True)
class Trajectory:
    """One track's occupied frames, ``(n, nodes, 2)`` points and ``(n, nodes)`` scores."""

    name: str
    frames: np.ndarray
    xy: np.ndarray
    scores: np.ndarray


def write_nwb(path: Path, source: Source) -> None:
    axis = track_axis(source)
    nwbfile = NWBFile(
        session_description=f"sleap_infer predictions for {Path(source.video.filename).name}",
        identifier=str(uuid.uuid4()),
        session_start_time=datetime.now(timezone.utc),
        notes=json.dumps({"provenance": source.provenance}),
    )
    skeleton = _add_skeleton(nwbfile, source)
    camera = Device(name="camera_0", description=f"camera of {source.video.filename}")
    nwbfile.add_device(camera)
    module = nwbfile.create_processing_module(
        name=f"SLEAP_VIDEO_000_{Path(source.video.filename).stem}",
        description=f"sleap_infer predictions; tracks are {axis.meaning}",
    )
    names = axis.names or ["untracked_0"]  # readers find the skeleton through a track
    context = f"tracks are {axis.meaning}"
    kind = "identity" if axis.identities else "not an identity"
    for track in _trajectories(source, names):
        about = f"track {track.name} ({kind}); {context}"
        module.add(_pose_estimation(track, about, source, skeleton, camera))
    with NWBHDF5IO(str(path), "w") as io:
        io.write(nwbfile)


def _add_skeleton(nwbfile: NWBFile, source: Source) -> Skeleton:
    edges = np.array(source.skeleton.edge_inds, dtype=np.uint8).reshape(-1, 2)
    skeleton = Skeleton(
        name=source.skeleton.name or "skeleton", nodes=source.node_names, edges=edges
    )
    behavior = nwbfile.create_processing_module(
        name="behavior", description="skeleton of the predicted poses"
    )
    behavior.add(Skeletons(skeletons=[skeleton]))
    return skeleton


def _trajectories(source: Source, names: list[str]) -> list[Trajectory]:
    """Each slot's instances, gathered in one pass over the journal (arrays, not objects);
    with ``source.empty_frames`` spread over every predicted frame, NaN where it is empty."""
    parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in names]
    for preds, slots in slotted_batches(source):
        frames = np.asarray(preds.frame_indices)
        for slot, found in enumerate(parts):
            b, i = np.nonzero(slots == slot)
            if b.size:
                found.append((frames[b], preds.points[b, i], preds.point_scores[b, i]))
    n_nodes = len(source.node_names)
    empty = (np.zeros(0, np.int64), np.zeros((0, n_nodes, 2)), np.zeros((0, n_nodes)))
    out = []
    for name, found in zip(names, parts):
        frames, xy, scores = (np.concatenate(a) for a in zip(*found)) if found else empty
        order = np.argsort(frames, kind="stable")
        xy, scores = xy[order].astype(np.float64), scores[order].astype(np.float64)
        track = Trajectory(name, frames[order].astype(np.int64), xy, scores)
        out.append(_on_frames(track, source.journal.predicted) if source.empty_frames else track)
    return out


def _on_frames(track: Trajectory, frames: np.ndarray) -> Trajectory:
    """``track`` spread over ``frames`` (sorted, unique, a superset of its own): NaN points
    and scores where it has no instance."""
    frames = np.asarray(frames, np.int64)
    at = np.searchsorted(frames, track.frames)
    xy = np.full((len(frames), *track.xy.shape[1:]), np.nan)
    scores = np.full((len(frames), *track.scores.shape[1:]), np.nan)
    xy[at], scores[at] = track.xy, track.scores
    return Trajectory(track.name, frames, xy, scores)


def _pose_estimation(
    track: Trajectory, description: str, source: Source, skeleton: Skeleton, camera: Device
) -> PoseEstimation:
    timestamps: np.ndarray | PoseEstimationSeries = track.frames / source.fps
    series = []
    for k, node in enumerate(source.node_names):
        one = PoseEstimationSeries(
            name=node,
            description=f"{node} of track {track.name}",
            data=track.xy[:, k],
            unit="pixels",
            reference_frame=REFERENCE_FRAME,
            confidence=track.scores[:, k],
            confidence_definition="peak confidence of the point",
            timestamps=timestamps,
        )
        timestamps = timestamps if series else one  # the rest link to the first's timestamps
        series.append(one)
    with warnings.catch_warnings():
        # sleap-io 0.9's reader finds the video only in the deprecated original_videos.
        warnings.filterwarnings("ignore", "The 'original_videos'", DeprecationWarning)
        return PoseEstimation(
            name=f"track={track.name}",
            description=description,
            pose_estimation_series=series,
            skeleton=skeleton,
            device=camera,
            original_videos=[source.video.filename],
            scorer=", ".join(source.provenance.get("model_types", [])) or "sleap_infer",
            source_software="sleap_infer",
            source_software_version=sleap_infer.__version__,
        )
