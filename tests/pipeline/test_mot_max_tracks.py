"""``--max-tracks N`` with a MOT tracker: no cap while tracking, the closed set at the end.

sleap-nn 0.3.5 (``MOTParams.link``, ``BaseMOTTracker.finalize``) never caps a MOT
tracker online: a known animal count runs identity linking with the closed set once
the video is tracked. Capped online, an animal that came back after its track was
forgotten stayed untracked for the rest of the video.
"""

from __future__ import annotations

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.pipeline.retrack import retrack_labels
from sleap_infer.tracking.options import TrackingOptions

N_FRAMES = 90
GONE = range(20, 60)  # animal B is away for longer than the track buffer (30)


def _broken_scene() -> sio.Labels:
    """Two animals far apart; B leaves and comes back, so its track breaks in two."""
    skeleton = sio.Skeleton(nodes=["a", "b", "c"], edges=[], name="s")
    video = sio.Video(
        filename="v.mp4",
        backend_metadata={"shape": [N_FRAMES, 256, 256, 1], "fps": 30.0, "grayscale": True},
        open_backend=False,
    )
    frames = []
    for f in range(N_FRAMES):
        starts = [(20.0 + 0.5 * f, 30.0)] + ([] if f in GONE else [(150.0, 60.0 + 0.5 * f)])
        insts = [
            sio.PredictedInstance.from_numpy(
                np.array([[x, y], [x + 12, y + 6], [x + 4, y + 14]]), skeleton=skeleton, score=0.9
            )
            for x, y in starts
        ]
        frames.append(sio.LabeledFrame(video=video, frame_idx=f, instances=insts))
    return sio.Labels(labeled_frames=frames, videos=[video], skeletons=[skeleton])


def _ids(options: TrackingOptions) -> list[list[str | None]]:
    labels = _broken_scene()
    retrack_labels(labels, options)
    return [[i.track.name if i.track else None for i in lf.instances] for lf in labels]


@pytest.mark.parametrize("tracker", ["bytetrack", "infer_bytetrack", "sort"])
def test_max_tracks_links_the_closed_set_instead_of_capping(tracker: str) -> None:
    free = _ids(TrackingOptions(tracker=tracker))
    assert len({n for f in free for n in f if n}) == 3  # the scene does break B's track
    got = _ids(TrackingOptions(tracker=tracker, max_tracks=2))
    assert len({n for f in got for n in f if n}) <= 2
    # no pose the uncapped tracker tracks is left untracked (capped: B's return was)
    assert sum(n is not None for f in got for n in f) == sum(n is not None for f in free for n in f)
    assert got == _ids(TrackingOptions(tracker=tracker, max_tracks=2, link_tracklets=True))


def test_the_classic_tracker_still_caps_with_local_queues() -> None:
    options = TrackingOptions(max_tracks=2)
    assert not options.links
    assert TrackingOptions(tracker="sort", max_tracks=2).links


def test_max_tracks_with_a_mot_tracker_and_cleaning_is_refused_in_one_line() -> None:
    with pytest.raises(UsageError, match="^--max-tracks with --tracker bytetrack links"):
        TrackingOptions(tracker="bytetrack", max_tracks=2, tracking_clean_instance_count=2)
