"""The whole-video MOT pre-pass (sleap-nn's ``prepare()``), as ``infer track`` runs it."""

from __future__ import annotations

import numpy as np
import pytest

from sleap_infer.tracking import POSES, Detections, make_tracker
from sleap_infer.tracking.common.prepare import calibrate_mot
from sleap_infer.tracking.options import TrackingOptions


def _frames(idx: list[int], size: float, scores: float, n_nodes: int = 2) -> list[Detections]:
    out = []
    for f in idx:
        pts = np.array([[[x + f, 10.0], [x + f + size, 10.0 + size]] for x in (0.0, 200.0)])
        out.append(Detections(f, pts[:, :n_nodes], np.full(2, scores)))
    return out


def test_stride_body_size_and_score_normalizer_come_from_the_whole_video() -> None:
    cal = calibrate_mot(_frames([0, 3, 6, 9, 12, 18], 30.0, 0.4), POSES)
    assert (cal.time_base, cal.frame_step) == ("frames", 3)
    assert cal.body_size == pytest.approx(30.0 * np.sqrt(2))
    assert cal.score_normalizer == pytest.approx(0.4)
    assert calibrate_mot(_frames([0, 3, 6], 30.0, 0.4), POSES, body_size=12.0).body_size == 12.0
    assert calibrate_mot([], POSES) is None


def test_irregular_frames_count_one_step_per_processed_frame() -> None:
    cal = calibrate_mot(_frames([0, 1, 3, 7, 12, 20], 30.0, 0.9), POSES)
    assert (cal.time_base, cal.frame_step) == ("steps", 1)


def test_a_prepared_tracker_uses_the_calibration_from_its_first_frame() -> None:
    """One-node poses: online, the first frames' pseudo boxes use the 50 px fallback; after
    the pre-pass they use the video's body size (a gap of 2 strides counts 2 steps)."""
    frames = _frames([0, 2, 4, 8], 30.0, 0.05, n_nodes=1)
    tracker = make_tracker(TrackingOptions(tracker="sort"), POSES, 1)
    cal = calibrate_mot(frames, POSES)
    tracker.prepare(cal)
    assert tracker.body_size() == cal.body_size != 50.0
    assert tracker._frame(frames[0]).scores.tolist() == [1.0, 1.0]
    for det in frames[:3]:
        tracker.step(det)
    assert tracker._steps(8) == 2


def test_the_appearance_half_resolves_auto_to_the_videos_gate() -> None:
    """Three animals with distinct re-ID vectors over 80 frames: the pre-pass's trials find
    appearance decisive, so ``auto`` gets a calibrated gate; online it stays off."""
    rng = np.random.default_rng(0)
    identity = np.eye(8)[:3] + 0.05 * rng.standard_normal((3, 8))
    frames = []
    for f in range(80):
        pts = np.array([[[x + f, 10.0], [x + f + 20, 30.0]] for x in (0.0, 200.0, 400.0)])
        vecs = identity + 0.01 * rng.standard_normal((3, 8))
        frames.append(Detections(f, pts, np.full(3, 0.9), embeddings=vecs))
    options = TrackingOptions(tracker="deepsort")
    online = make_tracker(options, POSES, 2, has_embeddings=True)
    online.step(frames[0])
    assert online.appearance_gate() is None
    prepared = make_tracker(options, POSES, 2, has_embeddings=True)
    cal = calibrate_mot(frames, POSES, None, (prepared.ema_alpha, prepared.gallery_size))
    assert cal.appearance is not None and cal.appearance.for_association
    assert cal.appearance.n_trials >= 100 and cal.vectors_seen
    prepared.prepare(cal)
    assert prepared.appearance_gate() == cal.appearance.gallery_cos_gate  # DeepSORT's
    assert prepared.appearance_gate("ema") == cal.appearance.ema_cos_gate
    assert prepared.appearance_margin() == cal.appearance.m_assoc >= 0.02
