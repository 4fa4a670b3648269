"""Box geometry shared by the MOT trackers: the vectorised forms against plain loops."""

from __future__ import annotations

import numpy as np

from sleap_infer.tracking.common import boxes as mb


def poses(rng: np.random.Generator, n: int, nodes: int) -> np.ndarray:
    out = rng.uniform(0, 200, (n, 1, 2)) + rng.normal(0, 15, (n, nodes, 2))
    out[rng.random((n, nodes)) < 0.3] = np.nan
    out[rng.random((n, nodes)) < 0.05, 0] = np.nan  # half-missing points count as missing
    return out


def test_shared_extents_match_a_loop_over_pairs() -> None:
    rng = np.random.default_rng(0)
    for nodes in (1, 3, 5, 9):
        a, b = poses(rng, 6, nodes), poses(rng, 7, nodes)
        count, lo_a, hi_a, lo_b, hi_b = mb.shared_extents(a, b)
        for i in range(len(a)):
            for j in range(len(b)):
                both = np.isfinite(a[i]).all(-1) & np.isfinite(b[j]).all(-1)
                assert count[i, j] == both.sum()
                for pose, lo, hi in ((a[i], lo_a, hi_a), (b[j], lo_b, hi_b)):
                    if both.any():
                        np.testing.assert_array_equal(lo[i, j], pose[both].min(axis=0))
                        np.testing.assert_array_equal(hi[i, j], pose[both].max(axis=0))
                    else:
                        assert (lo[i, j] == np.inf).all() and (hi[i, j] == -np.inf).all()


def test_shared_extents_of_skeletons_without_nodes() -> None:
    count, lo, *_ = mb.shared_extents(np.zeros((2, 0, 2)), np.zeros((3, 0, 2)))
    assert count.shape == (2, 3) and not count.any() and (lo == np.inf).all()


def test_one_box_takes_the_same_bits_as_a_batch() -> None:
    rng = np.random.default_rng(1)
    boxes = rng.uniform(0, 100, (200, 4))
    boxes[:, 2:] = boxes[:, :2] + rng.choice([0.0, 0.3, 5.0, 40.0], (200, 2))
    boxes[::17, 1] = np.nan
    batch = mb.xysr_from_xyxy(boxes)
    single = np.array([mb.xysr_from_xyxy(box) for box in boxes])
    np.testing.assert_array_equal(single.view(np.int64), batch.view(np.int64))


def test_shared_extents_are_the_same_by_pair_and_by_plane() -> None:
    rng = np.random.default_rng(2)
    a, b = poses(rng, 5, 6), poses(rng, 4, 6)
    by_plane = mb.shared_extents(a, b)
    by_pair = mb._shared_extents_by_pair(a, b)
    for x, y in zip(by_plane, by_pair):
        np.testing.assert_array_equal(x, y)
