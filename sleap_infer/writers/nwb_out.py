"""NWB predictions (``--format nwb``) with ndx-pose, laid out for the tools that read them.

Three readers, three expectations, one file:

* **movement** (``load_dataset(path, source_software="NWB")``, its defaults) reads the
  ``PoseEstimation`` called ``PoseEstimation`` in the processing module
  ``behavior``, as one animal named after ``NWBFile.identifier``, and times its
  rows ``0, 1/rate, 2/rate ...`` whatever the timestamps say. So every track is
  a ``PoseEstimation`` in ``behavior`` (named ``PoseEstimation`` when there is
  only one, else after the track), each series holds every frame of the video
  (as analysis HDF5 does; NaN where the track has no instance: a track that
  starts late starts at its true time), and is timed by ``rate`` (the video's
  frame rate) with ``starting_time`` 0 rather than by timestamps (nwbinspector's
  ``check_regular_timestamps``); only a video whose own timestamps stray from
  ``k / fps`` by half a frame or more (variable frame rate) gets timestamps, the
  video's (movement still times rows ``k / rate``). movement's own NWB writer
  sets the identifier to the animal's name, but DANDI (nwbinspector's
  ``check_unique_identifiers``, CRITICAL) wants it unique per file: here it
  is the animal's name (the subject id when given, else the track's name; the
  video's stem for several tracks) then ``-`` and 12 random hex digits, so
  movement's individual is still recognisable and two files never clash.
  movement reads one animal per call, so a file with several tracks needs
  ``pose_estimation_key=<track>`` per track (its reader has no way to return
  several from one file).
* **sleap-io** (``sio.load_nwb``, 0.9) only reads ``PoseEstimation``\\ s in
  modules named ``SLEAP_VIDEO_*``, numbers frames by their rank among all
  timestamps, scores instances by their mean point score, names tracks
  ``track<k>`` and treats them as identities only when the container names
  are ``track<digits>``. So the same tracks appear again in
  ``SLEAP_VIDEO_000_<video stem>``, their data hard-linked to ``behavior``'s
  (one dataset, two names), named ``track<k>`` (zero-padded, so that sorted order is
  track order) for identities and ``untracked_<k>`` for score ranks; the dense
  frame axis makes the rank the frame index. sleap-io's own writer loses the
  frame indices of sparse predictions and the tracks' identity on its own files.
* **DANDI / nwbinspector** want a subject and the recording's start time: both
  come from :class:`~sleap_infer.core.nwb_metadata.NwbMetadata` (``--nwb-*``),
  the start defaulting to the video file's recorded creation time; without one
  it is the time of writing, and the file's notes say so.

The tracks are the slots of :mod:`sleap_infer.writers.slots`: real identities
for multi-class models and tracked runs, else per-frame score ranks whose
``description`` says they are not identities. With nothing predicted the file
still holds one empty track, so readers find the skeleton.
"""

from __future__ import annotations

import json
import uuid
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from ndx_pose import PoseEstimation, PoseEstimationSeries, Skeleton, Skeletons
from pynwb import NWBHDF5IO, H5DataIO, NWBFile
from pynwb.device import Device
from pynwb.file import Subject

import sleap_infer
from sleap_infer.core.errors import VideoError
from sleap_infer.core.nwb_metadata import NwbMetadata, parse_time
from sleap_infer.writers.nwb_names import nwb_names
from sleap_infer.writers.slots import UNTRACKED, Source, TrackAxis, slotted_batches, track_axis

REFERENCE_FRAME = (
    "(x, y) in pixels from the top-left of the frame; the centre of the top-left pixel is (0, 0)"
)
MOVEMENT_KEY = "PoseEstimation"  # the name movement's reader looks for by default
SLEAP_MODULE = "SLEAP_VIDEO_000_{stem}"  # the module sleap-io's reader looks for


@dataclass(frozen=True)
class Trajectory:
    """One track over frames ``0 .. n-1``: ``(n, nodes, 2)`` points, ``(n, nodes)`` scores,
    NaN where the track has no instance."""

    name: str
    xy: np.ndarray
    scores: np.ndarray


def write_nwb(path: Path, source: Source) -> None:
    axis = track_axis(source)
    names = axis.names or [f"{UNTRACKED}0"]  # readers find the skeleton through a track
    tracks = _trajectories(source, names, max(source.video_frames, axis.last_frame + 1))
    start, start_known = _session_start(source)
    n_frames = len(tracks[0].xy)
    timing = frame_timing(Path(source.video.filename), n_frames, source.fps)
    nwbfile = NWBFile(
        session_description=_session_description(source),
        identifier=file_identifier(source, names),
        session_start_time=start,
        notes=json.dumps({"provenance": source.provenance, "session_start_time": start_known}),
        experimenter=source.nwb.experimenters,
        institution=source.nwb.nwb_institution,
        lab=source.nwb.nwb_lab,
        subject=_subject(source.nwb),
    )
    skeleton = Skeleton(
        name=source.skeleton.name or "skeleton",
        nodes=source.node_names,
        edges=np.array(source.skeleton.edge_inds, dtype=np.uint8).reshape(-1, 2),
    )
    camera = Device(name="camera_0", description=f"camera of {source.video.filename}")
    nwbfile.add_device(camera)
    behavior = nwbfile.create_processing_module(
        name="behavior", description=f"sleap_infer predictions; tracks are {axis.meaning}"
    )
    behavior.add(Skeletons(skeletons=[skeleton]))
    for_sleap_io = nwbfile.create_processing_module(
        name=SLEAP_MODULE.format(stem=Path(source.video.filename).stem),
        description="the tracks of behavior, linked (not copied), named for sleap_io.load_nwb",
    )
    copies: dict[str, str] = {}  # the sleap-io copy's name -> the behavior track it shares
    fitted = nwb_names([track.name for track in tracks])
    for k, track in enumerate(tracks):
        about = f"track {track.name} ({_kind(axis)}); tracks are {axis.meaning}"
        name = MOVEMENT_KEY if len(tracks) == 1 else fitted[k]
        main = _pose_estimation(name, track, about, source, skeleton, camera, timing)
        behavior.add(main)
        copy = _linked_copy(main, _sleap_io_name(axis, k, len(tracks)), source, camera, timing)
        for_sleap_io.add(copy)
        copies[copy.name] = name
    with NWBHDF5IO(str(path), "w") as io:
        io.write(nwbfile)
    share_data(path, f"processing/{for_sleap_io.name}", copies)


def share_data(path: Path, module: str, copies: dict[str, str]) -> None:
    """Point each copy's ``data`` and ``confidence`` at ``behavior``'s datasets (HDF5
    hard links: one dataset, two names), in place of the empty ones pynwb wrote."""
    with h5py.File(path, "r+") as f:
        for copy, main in copies.items():
            for node, series in f[f"{module}/{copy}"].items():
                if not isinstance(series, h5py.Group) or "data" not in series:
                    continue
                for key in ("data", "confidence"):
                    del series[key]
                    series[key] = f[f"processing/behavior/{main}/{node}/{key}"]


def _kind(axis: TrackAxis) -> str:
    return "identity" if axis.identities else "not an identity"


def file_identifier(source: Source, names: list[str]) -> str:
    """Unique per file (DANDI refuses a dandiset where two files share one), led by the
    animal's name because movement names the individual after the identifier: the subject
    id when given, else the one track's name, else (several tracks) the video's stem."""
    if source.nwb.nwb_subject:
        animal = source.nwb.nwb_subject
    elif len(names) == 1:
        animal = names[0]
    else:
        animal = Path(source.video.filename).stem
    return f"{animal}-{uuid.uuid4().hex[:12]}"


def _sleap_io_name(axis: TrackAxis, k: int, n: int) -> str:
    if axis.identities:
        return f"track{k:0{len(str(n - 1))}d}"
    return f"{UNTRACKED}{k}"


def _session_start(source: Source) -> tuple[datetime, str]:
    """The session start and where it came from (written into the file's notes)."""
    given = source.nwb.session_start()
    if given is not None:
        return given, "given (--nwb-session-start-time)"
    recorded = video_creation_time(Path(source.video.filename))
    if recorded is not None:
        return recorded, "the video file's recorded creation time"
    return datetime.now(timezone.utc), (
        "the time the predictions were written: the video records no creation time "
        "(set --nwb-session-start-time)"
    )


def video_creation_time(path: Path) -> datetime | None:
    """The ``creation_time`` a video container records (mp4, mov, mkv ...), if any."""
    import av

    try:
        with av.open(str(path)) as container:
            text = container.metadata.get("creation_time")
            if not text:
                streams = container.streams.video
                text = streams[0].metadata.get("creation_time") if streams else None
    except (OSError, av.FFmpegError):
        return None
    if not text:
        return None
    try:
        return parse_time(text, "creation_time")
    except ValueError:
        return None


def _session_description(source: Source) -> str:
    if source.nwb.nwb_session_description:
        return source.nwb.nwb_session_description
    return f"sleap_infer predictions for {Path(source.video.filename).name}"


def _subject(meta: NwbMetadata) -> Subject:
    """The subject as given; unknown id and sex say so (nwbinspector wants them set)."""
    given = meta.nwb_subject is not None
    return Subject(
        subject_id=meta.nwb_subject or "unknown",
        species=meta.nwb_species,
        sex=meta.nwb_sex or "U",
        age=meta.nwb_age,
        description=None if given else "not given (set --nwb-subject, --nwb-species ...)",
    )


def _trajectories(source: Source, names: list[str], n_frames: int) -> list[Trajectory]:
    """Each slot over frames 0 .. n_frames-1, filled in one pass over the journal."""
    n_nodes = len(source.node_names)
    xy = np.full((len(names), n_frames, n_nodes, 2), np.nan, np.float32)
    scores = np.full((len(names), n_frames, n_nodes), np.nan, np.float32)
    for preds, slots in slotted_batches(source):
        frames = np.asarray(preds.frame_indices)
        b, i = np.nonzero(slots >= 0)
        xy[slots[b, i], frames[b]] = preds.points[b, i]
        scores[slots[b, i], frames[b]] = preds.point_scores[b, i]
    return [Trajectory(name, xy[k], scores[k]) for k, name in enumerate(names)]


def frame_timing(video: Path, n_frames: int, fps: float) -> dict[str, Any]:
    """How the series are timed: ``rate`` (the frame rate, from ``starting_time`` 0) when
    the video's own timestamps are ``k / fps`` to within half a frame, else ``timestamps``
    (variable frame rate: pauses, dropped frames), frame k's presentation time after the
    first frame's. Frames past the table (or a video that cannot be read) get ``k / fps``.
    """
    times = np.arange(n_frames) / fps
    stamps = _presentation_times(video)
    if stamps is not None:
        m = min(len(stamps), n_frames)
        times[:m] = stamps[:m]
        if m < n_frames and m:
            times[m:] = stamps[m - 1] + np.arange(1, n_frames - m + 1) / fps
    if n_frames == 0 or np.max(np.abs(times - np.arange(n_frames) / fps)) < 0.5 / fps:
        return {"starting_time": 0.0, "rate": fps}
    return {"timestamps": times}


def _presentation_times(video: Path) -> np.ndarray | None:
    """Seconds from the first frame, per frame in presentation order (the frame index our
    reader and sleap-io use), from the packets' timestamps; None when they cannot say."""
    import av

    from sleap_infer.sources.video import FrameTable

    try:
        if not video.is_file():
            return None
        table = FrameTable.scan(video)
        with av.open(str(video)) as container:
            time_base = container.streams.video[0].time_base
    except (OSError, VideoError, av.FFmpegError, IndexError):
        return None
    if table is None or not len(table) or time_base is None:
        return None
    pts = np.asarray(table.pts, np.float64)
    return (pts - pts[0]) * float(time_base)


def _pose_estimation(
    name: str,
    track: Trajectory,
    description: str,
    source: Source,
    skeleton: Skeleton,
    camera: Device,
    timing: dict[str, Any],
) -> PoseEstimation:
    series: list[PoseEstimationSeries] = []
    for k, node in enumerate(source.node_names):
        series.append(
            PoseEstimationSeries(
                name=node,
                description=f"{node} of track {track.name}",
                data=_compressed(track.xy[:, k]),
                unit="pixels",
                reference_frame=REFERENCE_FRAME,
                confidence=_compressed(track.scores[:, k]),
                confidence_definition="peak confidence of the point; NaN: no instance there",
                **_timed(timing, series[0] if series else None),
            )
        )
    return PoseEstimation(
        name=name,
        description=description,
        pose_estimation_series=series,
        skeleton=skeleton,
        device=camera,
        scorer=", ".join(source.provenance.get("model_types", [])) or "sleap_infer",
        source_software="sleap_infer",
        source_software_version=sleap_infer.__version__,
    )


def _timed(timing: dict[str, Any], first: PoseEstimationSeries | None) -> dict[str, Any]:
    """``timing``, except that timestamps are written once and linked to after that."""
    if "timestamps" in timing and first is not None:
        return {"timestamps": first}
    return timing


def _compressed(values: np.ndarray) -> H5DataIO:
    """gzip: every frame of the video is stored, mostly NaN where a track is absent."""
    return H5DataIO(np.ascontiguousarray(values), compression="gzip", compression_opts=4)


def _linked_copy(
    main: PoseEstimation, name: str, source: Source, camera: Device, timing: dict[str, Any]
) -> PoseEstimation:
    """``main`` again for sleap-io, its series placeholders (compressed zeros) until
    :func:`share_data` links them to ``main``'s (pynwb 4 copies a series given as another's
    ``data``); timestamps, if any, link to ``main``'s."""
    first = next(iter(main.pose_estimation_series.values()))
    series = [
        PoseEstimationSeries(
            name=one.name,
            description=one.description,
            data=_compressed(np.zeros(one.data.data.shape, np.float32)),
            unit=one.unit,
            reference_frame=one.reference_frame,
            confidence=_compressed(np.zeros(one.confidence.data.shape, np.float32)),
            confidence_definition=one.confidence_definition,
            **_timed(timing, first),
        )
        for one in main.pose_estimation_series.values()
    ]
    with warnings.catch_warnings():
        # sleap-io 0.9's reader finds the video only in the deprecated original_videos.
        warnings.filterwarnings("ignore", "The 'original_videos'", DeprecationWarning)
        return PoseEstimation(
            name=name,
            description=f"{main.name} of the behavior module: {main.description}",
            pose_estimation_series=series,
            skeleton=main.skeleton,
            device=camera,
            original_videos=[source.video.filename],
            scorer=main.scorer,
            source_software=main.source_software,
            source_software_version=main.source_software_version,
        )
