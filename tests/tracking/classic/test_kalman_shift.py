"""``--use-kalman``: sleap-nn's rules, the shifted candidate, and an exact resume."""

from __future__ import annotations

import json

import numpy as np
import pytest
from journal_roundtrip import through_json

from sleap_infer.core.errors import UsageError
from sleap_infer.tracking import POSES, Detections, make_tracker
from sleap_infer.tracking.options import TrackingOptions

SHAPE = np.array([[0.0, 0.0], [14.0, 3.0], [26.0, -2.0], [8.0, 9.0]])


def kalman(**kw: object) -> TrackingOptions:
    return TrackingOptions(use_kalman=True, tracking_target_instance_count=3, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(use_kalman=True), "needs a known number of animals"),
        (dict(use_kalman=True, max_tracks=2, use_flow=True), "mutually exclusive"),
        (dict(use_kalman=True, max_tracks=2, tracker="sort"), "option of the classic tracker"),
        (dict(kf_init_frame_count=4), "--kf-init-frame-count only apply with --use-kalman"),
        (dict(kf_node_indices="0,1"), "--kf-node-indices only apply with --use-kalman"),
        (dict(use_kalman=True, max_tracks=2, kf_track_features="pose"), "centroid or keypoints"),
        (dict(use_kalman=True, max_tracks=2, kf_node_indices="0,x"), "comma-separated"),
        (
            dict(use_kalman=True, max_tracks=2, appearance_weight=0.3),
            "does not support the motion models",
        ),
    ],
)
def test_what_sleap_nn_refuses_is_one_usage_line(kw: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message) as err:
        TrackingOptions(**kw)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_defaults_are_sleap_nns_and_recorded() -> None:
    on = kalman(kf_node_indices="0, 2").with_tracker_defaults()
    assert (on.kf_track_features, on.kf_init_frame_count, on.kf_reset_gap_size) == (
        "centroid",
        10,
        5,
    )
    assert on.kf_node_indices == (0, 2) and on.oks_stddev == 0.025
    assert kalman(kf_track_features="keypoints").with_tracker_defaults().oks_stddev == 0.1
    assert kalman(kf_track_features="keypoints", oks_stddev=0.05).to_json()["oks_stddev"] == 0.05
    assert json.loads(json.dumps(on.to_json()))["kf_node_indices"] == [0, 2]
    off = TrackingOptions().to_json()  # off: recorded as off, its knobs unset
    assert off["use_kalman"] is False and off["kf_init_frame_count"] is None
    assert TrackingOptions(kf_node_indices="").kf_node_indices is None  # sleap-nn: all nodes


def test_masks_and_re_id_vectors_are_refused() -> None:
    with pytest.raises(UsageError, match="cannot track masks"):
        make_tracker(kalman(), "masks", 0)
    with pytest.raises(UsageError, match="cannot move re-ID vectors"):
        make_tracker(kalman(features="embeddings"), POSES, 4, has_embeddings=True)


def _scene(seed: int, n_frames: int = 60) -> list[Detections]:
    """Three animals with drifting velocities: misses, hidden nodes, strays, a gap."""
    rng = np.random.default_rng(seed)
    pos, vel = rng.uniform(60, 300, (3, 2)), rng.uniform(-4, 4, (3, 2))
    frames, f = [], 0
    for _ in range(n_frames):
        f += 1 if rng.random() > 0.05 else 7
        vel += rng.normal(0, 0.5, vel.shape)
        pos += vel
        poses = [SHAPE + pos[a] + rng.normal(0, 1, (4, 2)) for a in range(3) if rng.random() > 0.1]
        if rng.random() < 0.1:
            poses.append(SHAPE + rng.uniform(20, 340, 2))
        pts = np.array(poses).reshape(-1, 4, 2)
        pts[rng.random(pts.shape[:2]) < 0.1] = np.nan
        frames.append(Detections(f, pts, rng.uniform(0.3, 1.0, len(pts))))
    return frames


def test_a_fitted_track_is_scored_against_its_last_pose_moved_half_way() -> None:
    """One animal moving 4 px a frame: after warm-up the candidate is the last pose moved
    by half the predicted centroid step (sleap-nn's kf_prediction_blend 0.5)."""
    t = make_tracker(kalman(kf_init_frame_count=3), POSES, 4)
    for f in range(8):
        t.step(Detections(f, (SHAPE + np.array([50.0 + 4 * f, 80.0]))[None], np.ones(1)))
    shift = t.kalman
    assert shift.initialized and list(shift.filters) == [0]
    gallery = shift.candidates(t.window, 8, "keypoints")
    moved = gallery[0][0][0]
    last = SHAPE + np.array([50.0 + 4 * 7, 80.0])
    np.testing.assert_allclose(moved - last, [[2.0, 0.0]] * 4, atol=0.1)


@pytest.mark.parametrize("candidates", ["fixed_window", "local_queues"])
@pytest.mark.parametrize("features", ["centroid", "keypoints"])
@pytest.mark.parametrize("cut", [2, 9, 40])
def test_resume_from_state_is_bit_identical(candidates: str, features: str, cut: int) -> None:
    """Cut before the fit, just after it and late (filters reset and refitted)."""
    frames = _scene(seed=4)
    options = kalman(
        candidates=candidates,
        max_tracks=3 if candidates == "local_queues" else None,
        kf_track_features=features,
        kf_init_frame_count=5,
        kf_reset_gap_size=3,
        kf_node_indices="0,1,2" if features == "keypoints" else None,
    )
    whole = make_tracker(options, POSES, 4)
    expected = [whole.step(d) for d in frames]
    first = make_tracker(options, POSES, 4)
    got = [first.step(d) for d in frames[:cut]]
    resumed = make_tracker(options, POSES, 4)
    resumed.load_state(through_json(first.state()))
    got += [resumed.step(d) for d in frames[cut:]]
    for e, g in zip(expected, got):
        assert np.array_equal(e.track_ids, g.track_ids)
        assert e.scores.tobytes() == g.scores.tobytes()
    end, again = whole.state(), resumed.state()
    assert json.dumps(end.meta) == json.dumps(again.meta)
    for key, values in end.arrays.items():
        assert values.tobytes() == again.arrays[key].tobytes(), key
    assert whole.kalman.filters  # the shift ran


def test_node_indices_outside_the_skeleton_are_refused_before_tracking() -> None:
    """#45.18: an index past the skeleton was dropped silently (the provenance kept it)."""
    from sleap_infer.tracking import resolve_options

    with pytest.raises(UsageError, match=r"^--kf-node-indices 0,4: node index 4 is out of range"):
        resolve_options(kalman(kf_node_indices="0,4"), POSES, 4)
    with pytest.raises(UsageError, match="the skeleton has 1 node "):
        make_tracker(kalman(kf_node_indices="1"), POSES, 1)
    assert resolve_options(kalman(kf_node_indices="3,-4"), POSES, 4).kf_node_indices == (3, -4)
    assert resolve_options(kalman(kf_node_indices="9"), POSES, 0).kf_node_indices == (9,)  # unknown
