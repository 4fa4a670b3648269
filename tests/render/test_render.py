"""``infer render``: predictions drawn where they are, in track colours, on the frames asked for.

The scene: a flat grey video whose brightness encodes the frame index, and two
animals (three nodes on a horizontal line each) on two tracks. Rendered
videos are decoded back with PyAV; the PNG still (lossless) is checked to the
pixel.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import pairwise
from pathlib import Path

import av
import numpy as np
import pytest
import sleap_io as sio
import typer
from typer.testing import CliRunner

from sleap_infer.cli.help import HelpCommand
from sleap_infer.cli.render import default_output, render
from sleap_infer.core.errors import OutputError, UsageError, VideoError
from sleap_infer.render import render_frame, render_video
from sleap_infer.render.overlay import MASK_ALPHA, PALETTE
from sleap_infer.sources.open import open_video

from conftest import SHARED, write_video

H, W, N = 96, 128, 20
# (x, y) of the three nodes of each animal; edges head-mid, mid-tail.
ANIMALS = (
    np.array([[20.0, 40.0], [44.0, 40.0], [68.0, 40.0]]),
    np.array([[60.0, 76.0], [84.0, 76.0], [108.0, 76.0]]),
)
SCORES = (0.9, 0.75)


def _level(i: int) -> int:
    return 40 + 6 * i


def _source(path: Path, n: int = N) -> Path:
    frames = np.stack([np.full((H, W, 3), _level(i), np.uint8) for i in range(n)])
    return write_video(path, frames)


def _skeleton() -> sio.Skeleton:
    nodes = ["head", "mid", "tail"]
    return sio.Skeleton(list(nodes), edges=[("head", "mid"), ("mid", "tail")], name="s")


def _predictions(
    tmp_path: Path, tracked: bool = True, n: int = N, skip: frozenset[int] = frozenset()
) -> Path:
    """Every frame but ``skip`` holds both animals; ``pred.slp`` next to ``src.mp4``."""
    video_path = _source(tmp_path / "src.mp4", n)
    video = sio.Video.from_filename(str(video_path))
    skeleton = _skeleton()
    tracks = [sio.Track(name="a"), sio.Track(name="b")] if tracked else []
    frames = []
    for f in range(n):
        if f in skip:
            continue
        insts = [
            sio.PredictedInstance.from_numpy(
                points.copy(),
                skeleton=skeleton,
                point_scores=np.ones(3),
                score=score,
                track=tracks[k] if tracked else None,
            )
            for k, (points, score) in enumerate(zip(ANIMALS, SCORES))
        ]
        frames.append(sio.LabeledFrame(video=video, frame_idx=f, instances=insts))
    labels = sio.Labels(labeled_frames=frames, videos=[video], skeletons=[skeleton], tracks=tracks)
    path = tmp_path / "pred.slp"
    sio.save_slp(labels, str(path), embed=False, verbose=False)
    return path


def _decode(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def _read_png(path: Path) -> np.ndarray:
    frames = _decode(path)
    assert len(frames) == 1
    return frames[0]


def _source_frame(video: Path, index: int) -> np.ndarray:
    """What the renderer starts from (the test video is a few grey levels off ``_level``)."""
    return dict(open_video(video).iter_frames([index]))[index]


def _segment_distance(shape: tuple[int, int], points: np.ndarray) -> np.ndarray:
    """Per pixel, the distance to the polyline through ``points``."""
    ys, xs = np.mgrid[: shape[0], : shape[1]].astype(np.float64)
    best = np.full(shape, np.inf)
    for a, b in pairwise(points):
        d = b - a
        t = np.clip(((xs - a[0]) * d[0] + (ys - a[1]) * d[1]) / (d @ d), 0, 1)
        best = np.minimum(best, np.hypot(xs - (a[0] + t * d[0]), ys - (a[1] + t * d[1])))
    return best


def _near_drawing(
    shape: tuple[int, int], animals: tuple[np.ndarray, ...], reach: float
) -> np.ndarray:
    """Pixels within ``reach`` of a skeleton, or in the score label above it."""
    near = np.zeros(shape, bool)
    for points in animals:
        near |= _segment_distance(shape, points) <= reach
        top, left = int(points[:, 1].min()), int(points[:, 0].min())
        near[max(top - 20, 0) : top, max(left - 2, 0) : left + 24] = True
    return near


def _changed(image: np.ndarray, level: int, tol: int) -> np.ndarray:
    return np.abs(image.astype(int) - level).max(axis=-1) > tol


def _close(pixel: np.ndarray, color: tuple[int, int, int], tol: int) -> bool:
    return bool(np.abs(pixel.astype(int) - np.array(color)).max() <= tol)


# ------------------------------------------------------------------------ video
def test_video_draws_skeletons_on_every_frame_in_track_colours(tmp_path: Path) -> None:
    pred = _predictions(tmp_path)
    calls: list[int] = []
    totals: list[int] = []
    stats = render_video(
        pred, tmp_path / "out.mp4", crf=0, on_frame=lambda: calls.append(1), on_start=totals.append
    )
    frames = _decode(tmp_path / "out.mp4")
    assert len(frames) == N == stats.frames == len(calls) == totals[0]
    assert (stats.annotated, stats.instances, stats.height, stats.width) == (N, 2 * N, H, W)
    assert stats.fps == pytest.approx(30.0) and not stats.bad_frames and not stats.warnings
    near = _near_drawing((H, W), ANIMALS, reach=6)
    on_edges = np.min([_segment_distance((H, W), points) for points in ANIMALS], axis=0) <= 0.5
    for i in (0, 7, N - 1):
        image = frames[i]
        assert image.shape == (H, W, 3)
        changed = _changed(image, _level(i), tol=12)
        assert changed[on_edges].all()  # every pixel on an edge was drawn over
        assert not changed[~near].any()  # and nothing away from the drawing
        # Nodes are dots wide enough to keep their colour through yuv420p: one per track.
        assert _close(image[40, 20], PALETTE[0], 24)
        assert _close(image[76, 108], PALETTE[1], 24)
        assert not _close(image[40, 20], PALETTE[1], 60)


def test_frames_selects_exactly_those_frames_in_order(tmp_path: Path) -> None:
    pred = _predictions(tmp_path)
    stats = render_video(pred, tmp_path / "sel.mp4", frames="0-3,10,15-16", crf=0)
    frames = _decode(tmp_path / "sel.mp4")
    assert len(frames) == stats.frames == 7
    far = ~_near_drawing((H, W), ANIMALS, reach=8)
    levels = [int(np.median(f[far])) for f in frames]
    assert levels == pytest.approx([_level(i) for i in (0, 1, 2, 3, 10, 15, 16)], abs=2)


def test_frames_past_the_end_are_clamped_with_a_warning(tmp_path: Path) -> None:
    pred = _predictions(tmp_path)
    stats = render_video(pred, tmp_path / "c.mp4", frames=f"{N - 2}-{N + 5}")
    assert stats.frames == 2 and len(_decode(tmp_path / "c.mp4")) == 2
    assert len(stats.warnings) == 1 and "past the end" in stats.warnings[0]


def test_unannotated_frames_are_written_plain(tmp_path: Path) -> None:
    pred = _predictions(tmp_path, skip=frozenset({3}))
    stats = render_video(pred, tmp_path / "s.mp4", frames="2-4", crf=0)
    assert (stats.frames, stats.annotated) == (3, 2)
    plain = _decode(tmp_path / "s.mp4")[1]
    assert not _changed(plain, _level(3), tol=2).any()


def test_fps_scale_and_crf(tmp_path: Path) -> None:
    pred = _predictions(tmp_path)
    stats = render_video(pred, tmp_path / "half.mp4", fps=12.5, scale=0.5, crf=0)
    with av.open(str(tmp_path / "half.mp4")) as container:
        stream = container.streams.video[0]
        assert stream.average_rate == Fraction(25, 2)
    frames = _decode(tmp_path / "half.mp4")
    assert (stats.height, stats.width) == (H // 2, W // 2) == frames[0].shape[:2]
    # (x + 0.5) * 0.5 - 0.5: node (20, 40) lands on pixel (9.75, 19.75) -> (10, 20).
    assert _close(frames[0][20, 10], PALETTE[0], 40)
    # Odd output sizes are padded by one black column / row (H.264 needs even sizes).
    odd = render_video(pred, tmp_path / "odd.mp4", scale=0.9, frames="0")
    assert (odd.height, odd.width) == (86, 116)
    assert _decode(tmp_path / "odd.mp4")[0].shape == (86, 116, 3)
    # A lower quality makes a smaller file.
    render_video(pred, tmp_path / "small.mp4", crf=45)
    render_video(pred, tmp_path / "big.mp4", crf=5)
    assert (tmp_path / "small.mp4").stat().st_size < (tmp_path / "big.mp4").stat().st_size


def test_untracked_instances_are_coloured_by_their_place_in_the_frame(tmp_path: Path) -> None:
    pred = _predictions(tmp_path, tracked=False)
    render_frame(pred, 0, tmp_path / "u.png")
    image = _read_png(tmp_path / "u.png")
    assert tuple(image[40, 20]) == PALETTE[0] and tuple(image[76, 108]) == PALETTE[1]


def test_track_colours_follow_the_track_not_the_list_order(tmp_path: Path) -> None:
    """Swapping the instances' order in a frame keeps each animal's colour."""
    pred = _predictions(tmp_path)
    labels = sio.load_slp(str(pred))
    labels.labeled_frames[0].instances.reverse()
    sio.save_slp(labels, str(pred), embed=False, verbose=False)
    render_frame(pred, 0, tmp_path / "r.png")
    image = _read_png(tmp_path / "r.png")
    assert tuple(image[40, 20]) == PALETTE[0] and tuple(image[76, 108]) == PALETTE[1]


# ------------------------------------------------------------------------ still
def test_still_is_the_video_frame_drawn_losslessly(tmp_path: Path) -> None:
    pred = _predictions(tmp_path)
    stats = render_frame(pred, 7, tmp_path / "f7.png")
    assert (stats.frames, stats.instances, stats.height, stats.width) == (1, 2, H, W)
    still = _read_png(tmp_path / "f7.png")
    assert still.shape == (H, W, 3)
    near = _near_drawing((H, W), ANIMALS, reach=6)
    assert (still[~near] == _source_frame(tmp_path / "src.mp4", 7)[~near]).all()  # untouched
    for k, points in enumerate(ANIMALS):
        for x, y in points.astype(int):
            assert tuple(still[y, x]) == PALETTE[k]
    # The score label: digits in the track colour on black above the topmost node.
    label = still[20:40, 18:44]
    assert (label == 0).all(axis=-1).any() and (label == PALETTE[0]).all(axis=-1).sum() > 10
    # The video shows the same drawing (up to H.264's losses).
    render_video(pred, tmp_path / "f7.mp4", frames="7", crf=0)
    frame = _decode(tmp_path / "f7.mp4")[0]
    assert np.abs(frame.astype(int) - still).mean() < 3


def test_masks_are_tinted_and_boxes_outlined(tmp_path: Path) -> None:
    video_path = _source(tmp_path / "src.mp4", 2)
    video = sio.Video.from_filename(str(video_path))
    track = sio.Track(name="only")
    data = np.zeros((10, 10), bool)
    data[2:8, 2:8] = True
    mask = sio.PredictedSegmentationMask.from_numpy(
        data, scale=(0.5, 0.5), offset=(30.0, 10.0), track=track, score=0.9
    )
    box = sio.PredictedBoundingBox(x1=80, y1=20, x2=110, y2=60, score=0.5)
    lf = sio.LabeledFrame(video=video, frame_idx=1, masks=[mask], bboxes=[box])
    labels = sio.Labels(labeled_frames=[lf], videos=[video], tracks=[track])
    pred = tmp_path / "shapes.slp"
    sio.save_slp(labels, str(pred), embed=False, verbose=False)
    stats = render_frame(pred, 1, tmp_path / "s.png")
    assert (stats.annotated, stats.instances) == (1, 0)
    image = _read_png(tmp_path / "s.png").astype(int)
    level = int(_source_frame(video_path, 1)[0, 0, 0])
    tinted = np.rint(level * (1 - MASK_ALPHA) + np.array(PALETTE[0]) * MASK_ALPHA)
    # Mask pixels 2..7 at scale 0.5 from (30, 10): image x 34..45, y 14..25.
    assert (np.abs(image[14:26, 34:46] - tinted) <= 1).all()
    assert (image[10:14, 30:50] == level).all() and (image[26:32, 30:50] == level).all()
    # The box: its sides drawn, its inside and outside left alone.
    assert (
        _changed(image[20:61, 80], level, 2).all() and _changed(image[60, 80:111], level, 2).all()
    )
    assert (image[30:50, 88:102] == level).all() and (image[:, 116:] == level).all()


# ------------------------------------------------------------------- bad inputs
def _one_line(exc: pytest.ExceptionInfo[BaseException], *words: str) -> None:
    text = str(exc.value)
    assert "\n" not in text, text
    for word in words:
        assert word in text, text


def test_bad_inputs_are_one_line_errors_naming_the_file(tmp_path: Path) -> None:
    pred = _predictions(tmp_path)
    out = tmp_path / "o.mp4"
    with pytest.raises(UsageError) as exc:
        render_video(tmp_path / "missing.slp", out)
    _one_line(exc, "missing.slp", "no such file")
    with pytest.raises(UsageError) as exc:
        render_video(tmp_path / "src.mp4", out)
    _one_line(exc, "src.mp4", ".slp")
    with pytest.raises(VideoError) as exc:
        render_frame(pred, N + 3, tmp_path / "o.png")
    _one_line(exc, "src.mp4", f"frame {N + 3}", "out of range", f"{N} frames")
    with pytest.raises(VideoError) as exc:
        render_video(pred, out, frames="500-600")
    _one_line(exc, "src.mp4", "selects no frame")
    with pytest.raises(UsageError) as exc:
        render_video(pred, out, frames="3-x")
    _one_line(exc, "--frames")
    with pytest.raises(UsageError) as exc:
        render_video(pred, tmp_path / "o.gif")
    _one_line(exc, "o.gif", ".mp4")
    with pytest.raises(UsageError) as exc:
        render_video(pred, out, crf=70)
    _one_line(exc, "--crf")
    with pytest.raises(UsageError) as exc:
        render_video(pred, out, scale=0)
    _one_line(exc, "--scale")
    with pytest.raises(UsageError) as exc:
        render_video(pred, pred.with_suffix(".mp4").with_name("src.mp4"))
    _one_line(exc, "src.mp4", "replace")
    (tmp_path / "src.mp4").rename(tmp_path / "moved.mp4")
    with pytest.raises(VideoError) as exc:
        render_video(pred, out)
    _one_line(exc, "pred.slp", "src.mp4", "not found", "--video")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["moved.mp4", "pred.slp"]  # no leftovers
    # --video reads the frames from where they are now.
    stats = render_video(pred, out, video=tmp_path / "moved.mp4", frames="0-1")
    assert stats.frames == 2 and stats.source.name == "moved.mp4"


def test_a_failed_write_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pred = _predictions(tmp_path, n=3)
    out = tmp_path / "o.mp4"
    out.write_bytes(b"previous")
    import sleap_infer.render.encode as encode

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(encode, "fsync_path", full_disk)
    with pytest.raises(OutputError) as exc:
        render_video(pred, out)
    _one_line(exc, "o.mp4", "No space left")
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.mp4", "pred.slp", "src.mp4"]


# -------------------------------------------------------------------------- CLI
def _app() -> typer.Typer:
    app = typer.Typer(rich_markup_mode=None)
    app.command(cls=HelpCommand)(render)
    app.command("noop")(lambda: None)  # two commands: invoked as "render ..."
    return app


def test_cli_renders_next_to_the_input_and_refuses_to_overwrite(tmp_path: Path) -> None:
    pred = _predictions(tmp_path, n=4)
    runner = CliRunner()
    result = runner.invoke(_app(), ["render", str(pred)])
    assert result.exit_code == 0, result.output
    assert len(_decode(tmp_path / "pred.render.mp4")) == 4
    assert "4 frames" in result.output and "pred.render.mp4" in result.output
    result = runner.invoke(_app(), ["render", str(pred)])
    assert isinstance(result.exception, UsageError) and "--overwrite" in str(result.exception)
    result = runner.invoke(_app(), ["render", str(pred), "--frame", "2"])
    assert result.exit_code == 0, result.output
    assert _read_png(tmp_path / "pred.frame2.png").shape == (H, W, 3)
    assert default_output(Path("a/x.pkg.slp"), None) == Path("a/x.render.mp4")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--frame", "1", "--frames", "0-3"], ("--frame", "--frames")),
        (["--frame", "1", "-o", "x.mp4"], ("x.mp4", "PNG")),
        (["-o", "x.png"], ("x.png", "--frame")),
    ],
)
def test_cli_still_or_video_mix_ups_are_usage_errors(
    tmp_path: Path, args: list[str], words: tuple[str, ...]
) -> None:
    result = CliRunner().invoke(_app(), ["render", str(tmp_path / "p.slp"), *args])
    assert isinstance(result.exception, UsageError)
    assert all(w in str(result.exception) for w in words)


# ------------------------------------------------------------------ real files
@pytest.fixture()
def synthetic_multi() -> Path:
    folder = SHARED / "videos"
    if not (folder / "synthetic_multi.pkg.slp").is_file():
        pytest.skip(f"shared fixtures not found at {SHARED}")
    return folder


def test_segmentation_masks_of_sleap_nn_are_tinted_in_track_colours(
    tmp_path: Path, synthetic_multi: Path
) -> None:
    pred = SHARED / "reference" / "bottomup_segmentation_tracked.slp"
    package = synthetic_multi / "synthetic_multi.pkg.slp"
    labels = sio.load_slp(str(pred), open_videos=False)
    tracks = {id(t): k for k, t in enumerate(labels.tracks)}
    source = dict(open_video(package).iter_frames([0, 9, 17]))
    for lf in labels.labeled_frames:
        if lf.frame_idx not in source:
            continue
        stats = render_frame(pred, lf.frame_idx, tmp_path / "m.png", video=package)
        assert stats.annotated == 1
        image = _read_png(tmp_path / "m.png").astype(int)
        frame = source[lf.frame_idx].astype(int)
        assert all(m.offset == (0.0, 0.0) for m in lf.masks)  # so resampling maps them
        full = [m.resampled(*m.image_extent).data for m in lf.masks]  # sleap-io's own mapping
        union = np.any(full, axis=0)
        count = np.sum(full, axis=0)
        assert union.any()
        assert (image[~union] == frame[~union]).all()
        assert (np.abs(image[union] - frame[union]).max(axis=-1) >= 3).mean() > 0.95
        for mask, region in zip(lf.masks, full):
            alone = region & (count == 1)
            color = np.array(PALETTE[tracks[id(mask.track)] % len(PALETTE)])
            expected = np.rint(frame[alone] * (1 - MASK_ALPHA) + color * MASK_ALPHA)
            assert (np.abs(image[alone] - expected) <= 1).all()
    stats = render_video(pred, tmp_path / "m.mp4", video=synthetic_multi / "synthetic_multi.mp4")
    assert stats.frames == stats.annotated == len(_decode(tmp_path / "m.mp4")) == 24


def test_pose_labels_of_a_real_video_draw_their_nodes(
    tmp_path: Path, synthetic_multi: Path
) -> None:
    pred = synthetic_multi / "small_robot_minimal.slp"
    labels = sio.load_slp(str(pred), open_videos=False)
    lf = labels.labeled_frames[0]
    stats = render_frame(
        pred, lf.frame_idx, tmp_path / "r.png", video=synthetic_multi / "small_robot.mp4"
    )
    image = _read_png(tmp_path / "r.png")
    assert stats.instances == len(lf.instances) >= 1
    for k, inst in enumerate(lf.instances):
        for x, y in np.rint(inst.numpy()[~np.isnan(inst.numpy()).any(axis=1)]).astype(int):
            assert tuple(image[y, x]) == PALETTE[k]


@pytest.mark.parametrize(
    ("size", "scale", "said"),
    [
        (
            (1, 1),
            1.0,
            "v.mp4: 1x1 frames are too small to draw on: render needs at least 9 "
            "pixels a side, the width of one node's dot",
        ),
        (
            (4, 6),
            1.0,
            "v.mp4: 4x6 frames are too small to draw on: render needs at least 9 "
            "pixels a side, the width of one node's dot; --scale 2.25 draws them",
        ),
        ((100, 120), 0.05, "v.mp4: 100x120 frames at --scale 0.05 (5x6) are too small"),
    ],
)
def test_too_small_a_picture_says_the_limit_and_why(
    size: tuple[int, int], scale: float, said: str
) -> None:
    """Issue 45 item 23: 1x1 frames said they "would shrink to (1, 1)" at --scale 1."""
    from sleap_infer.render.scene import MIN_SIDE, scaled_size

    with pytest.raises(UsageError) as exc:
        scaled_size(*size, scale, "v.mp4")
    assert str(exc.value).startswith(said) and "\n" not in str(exc.value)
    assert "shrink" not in str(exc.value)
    assert scaled_size(MIN_SIDE, MIN_SIDE, 1.0) == (MIN_SIDE, MIN_SIDE)


def test_render_names_the_video_whose_frames_are_too_small(tmp_path: Path) -> None:
    pred = _predictions(tmp_path)
    with pytest.raises(UsageError) as exc:
        render_video(pred, tmp_path / "o.mp4", scale=0.01)
    _one_line(exc, "src.mp4", "too small to draw on", "at least 9 pixels")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pred.slp", "src.mp4"]
