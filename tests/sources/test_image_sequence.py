"""Image folders and image globs predicted as one video (sleap-io's ImageVideo)."""

from __future__ import annotations

from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.batch.tasks import plan_tasks
from sleap_infer.core.errors import VideoError
from sleap_infer.sources.images import ImageSequenceReader
from sleap_infer.sources.inputs import expand_inputs
from sleap_infer.sources.open import open_video
from sleap_infer.sources.video import DECODE_ERROR, FrameError
from sleap_infer.writers.registry import FORMATS

import scene
from conftest import SYNTHETIC_MODEL, counter_frames, pipeline


def _write_images(folder: Path, frames: np.ndarray, names: list[str]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / name for name in names]
    for path, frame in zip(paths, frames):
        iio.imwrite(path, frame)
    return paths


@pytest.fixture()
def colour_folder(tmp_path: Path) -> tuple[Path, np.ndarray]:
    frames = counter_frames(12, gray=False)
    frames[:, 5:9, 3:30, 2] = 200  # not gray: R, G and B differ
    _write_images(tmp_path / "frames", frames, [f"f{i}.png" for i in range(12)])
    return tmp_path / "frames", frames


def test_frames_equal_the_pixels_in_sleap_io_order(
    colour_folder: tuple[Path, np.ndarray],
) -> None:
    folder, frames = colour_folder
    reader = open_video(folder)
    assert isinstance(reader, ImageSequenceReader)
    info = reader.info
    assert (info.path, info.n_frames, info.height, info.width) == (folder.absolute(), 12, 64, 96)
    assert not info.grayscale and reader.channels_for(1) == 3 and info.fps > 0
    # Plain order, as sleap-io's ImageVideo: f10 and f11 right after f1.
    order = [0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9]
    assert [Path(f).name for f in info.files] == [f"f{i}.png" for i in order]
    got = dict(reader.iter_frames(None, 3))
    assert sorted(got) == list(range(12))
    for k, i in enumerate(order):
        np.testing.assert_array_equal(got[k], frames[i])  # PNG is lossless
    assert [i for i, _ in reader.iter_frames([7, 2], 3)] == [2, 7]
    assert [i for i, _ in reader.iter_frames(None, 3, start=10)] == [10, 11]


def test_frame_i_is_what_sleap_io_shows_as_frame_i(tmp_path: Path) -> None:
    frames = counter_frames(12, gray=False)
    names = [f"f{i}.png" for i in range(12)] + ["x.PNG", ".hidden.png", "notes.txt"]
    _write_images(tmp_path / "seq", np.concatenate([frames, frames[:2]]), names)
    (tmp_path / "seq" / "notes.txt").write_text("not an image")
    reader = ImageSequenceReader(tmp_path / "seq")
    video = sio.load_video(str(tmp_path / "seq"), grayscale=False)
    assert list(reader.info.files) == [str(Path(f).absolute()) for f in video.filename]
    got = dict(reader.iter_frames(None, 3))
    for i in got:
        np.testing.assert_array_equal(got[i], video[i])
    # x.PNG is left out (sleap-io leaves it out), and a note says so.
    assert len(reader.info.notes) == 1 and "x.PNG" in reader.info.notes[0]


def test_a_folder_of_upper_case_suffixes_is_read_in_plain_order(tmp_path: Path) -> None:
    _write_images(tmp_path / "cam", counter_frames(3), ["IMG_10.JPG", "IMG_2.JPG", "IMG_1.JPG"])
    reader = ImageSequenceReader(tmp_path / "cam")
    assert [Path(f).name for f in reader.info.files] == ["IMG_1.JPG", "IMG_10.JPG", "IMG_2.JPG"]
    assert reader.info.notes == ()


def test_a_cmyk_jpeg_reads_like_its_rgb_copy(tmp_path: Path) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    rgb = np.clip(counter_frames(1, gray=False)[0] + rng.integers(0, 60, (64, 96, 3)), 0, 255)
    rgb = rgb.astype(np.uint8)
    (tmp_path / "cmyk").mkdir()
    (tmp_path / "rgb").mkdir()
    Image.fromarray(rgb).convert("CMYK").save(tmp_path / "cmyk" / "a.jpg", quality=95)
    Image.open(tmp_path / "cmyk" / "a.jpg").convert("RGB").save(tmp_path / "rgb" / "a.png")
    cmyk = next(iter(ImageSequenceReader(tmp_path / "cmyk").iter_frames(None, 3)))[1]
    copy = next(iter(ImageSequenceReader(tmp_path / "rgb").iter_frames(None, 3)))[1]
    assert cmyk.shape == (64, 96, 3)
    np.testing.assert_array_equal(cmyk, copy)
    assert np.abs(cmyk.astype(int) - rgb.astype(int)).mean() < 4  # K is not dropped


def test_gray_jpegs_give_one_channel(tmp_path: Path) -> None:
    frames = counter_frames(3)[..., 0]
    _write_images(tmp_path / "jpgs", frames, ["a.jpg", "b.jpeg", "c.jpg"])
    reader = ImageSequenceReader(tmp_path / "jpgs")
    assert reader.info.grayscale and reader.channels_for(1) == 1
    got = list(reader.iter_frames(None, 1))
    assert [frame.shape for _, frame in got] == [(64, 96, 1)] * 3
    assert abs(int(got[1][1].mean()) - int(frames[1].mean())) <= 2  # JPEG is lossy
    assert next(iter(reader.iter_frames([0], 3)))[1].shape == (64, 96, 3)


def test_a_corrupt_image_is_one_bad_frame(tmp_path: Path) -> None:
    frames = counter_frames(6)
    paths = _write_images(tmp_path / "seq", frames, [f"img_{i:03d}.png" for i in range(6)])
    paths[2].write_bytes(paths[2].read_bytes()[:60])  # truncated PNG
    errors: list[FrameError] = []
    got = dict(open_video(tmp_path / "seq").iter_frames(None, 3, errors.append))
    assert sorted(got) == [0, 1, 3, 4, 5]
    np.testing.assert_array_equal(got[5], frames[5])
    assert [(e.index, e.kind) for e in errors] == [(2, DECODE_ERROR)]
    assert "img_002.png" in errors[0].reason


def test_mixed_sizes_refuse_the_sequence_in_one_line(tmp_path: Path) -> None:
    # The fault: the first image set the size and 11 of 12 frames were dropped, exit 0.
    frames = counter_frames(12)
    paths = _write_images(tmp_path / "seq", frames, [f"img_{i:03d}.png" for i in range(12)])
    for p in paths[1:]:
        iio.imwrite(p, np.zeros((32, 48, 3), np.uint8))
    with pytest.raises(VideoError) as info:
        open_video(tmp_path / "seq")
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith(
        "seq: images differ in size: img_001.png is 32x48, img_000.png is 64x96 "
        "(11 of 12 differ); resize them to one size"
    )


def test_12_bit_data_in_16_bit_images_is_scaled_by_its_real_depth(tmp_path: Path) -> None:
    # The fault: 0-4095 scaled as 0-65535 gave frames of 0-16 grey levels.
    folder = tmp_path / "tif"
    folder.mkdir()
    ramp = np.linspace(0, 4095, 64 * 96).reshape(64, 96).astype(np.uint16)
    iio.imwrite(folder / "a.tif", ramp)
    iio.imwrite(folder / "b.tif", ramp // 2)  # a dimmer frame keeps the sequence's scale
    reader = open_video(folder)
    got = dict(reader.iter_frames(None, 1))
    assert got[0].max() == 255 and got[0].min() == 0
    assert abs(int(got[1].max()) - 128) <= 1
    # Full-range 16-bit data keeps the full-range scale.
    iio.imwrite(folder / "a.tif", (ramp.astype(np.uint32) * 16).astype(np.uint16))
    assert open_video(folder).depth == 16


def test_first_image_broken_size_comes_from_the_next(tmp_path: Path) -> None:
    paths = _write_images(tmp_path / "seq", counter_frames(3), ["1.png", "2.png", "3.png"])
    paths[0].write_bytes(b"not a png")
    reader = ImageSequenceReader(tmp_path / "seq")
    assert (reader.info.n_frames, reader.info.height) == (3, 64)
    errors: list[FrameError] = []
    assert [i for i, _ in reader.iter_frames(None, 3, errors.append)] == [1, 2]
    assert [e.index for e in errors] == [0]
    for p in paths[1:]:
        p.write_bytes(b"")
    with pytest.raises(VideoError, match="none of its 3 images decodes"):
        ImageSequenceReader(tmp_path / "seq")
    with pytest.raises(VideoError, match="no images"):
        ImageSequenceReader(tmp_path)


def test_image_folder_and_image_glob_are_one_input_each(tmp_path: Path) -> None:
    frames = counter_frames(4)
    _write_images(tmp_path / "a", frames, ["f1.png", "f2.png", "f10.png", "g1.png"])
    _write_images(tmp_path / "b" / "frames", frames[:2], ["x.jpg", "y.jpg"])
    (tmp_path / "b" / "clip.mp4").write_bytes(b"x")
    (tmp_path / "b" / "still.png").write_bytes(b"x")

    folder = expand_inputs([tmp_path / "a"])
    assert [(i.path, i.root, i.problem) for i in folder] == [(tmp_path / "a", None, None)]
    # A folder with videos contributes its videos only; --recursive finds the image subfolder.
    assert [i.path.name for i in expand_inputs([tmp_path / "b"])] == ["clip.mp4"]
    deep = expand_inputs([tmp_path], recursive=True)
    assert [i.path.relative_to(tmp_path).as_posix() for i in deep] == [
        "a",
        "b/clip.mp4",
        "b/frames",
    ]
    # A glob of all of a folder's images is that folder; of some of them, the pattern.
    assert [i.path for i in expand_inputs([str(tmp_path / "a" / "*.png")])] == [tmp_path / "a"]
    subset = expand_inputs([str(tmp_path / "a" / "f*.png")])
    assert [i.path for i in subset] == [tmp_path / "a" / "f*.png"]
    reader = open_video(subset[0].path)
    assert [Path(f).name for f in reader.info.files] == ["f1.png", "f10.png", "f2.png"]
    assert reader.info.path == (tmp_path / "a").absolute()
    listing = tmp_path / "list.txt"
    listing.write_text("a\nb/frames\n")
    assert [i.path for i in expand_inputs([listing])] == [tmp_path / "a", tmp_path / "b/frames"]

    tasks = plan_tasks(deep, None, FORMATS["slp"])
    assert tasks[0].output == tmp_path / "a.predictions.slp"
    under = plan_tasks(deep, tmp_path / "out", FORMATS["slp"])
    assert under[2].output == tmp_path / "out" / "b" / "frames.predictions.slp"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert expand_inputs([empty])[0].problem.startswith("no videos in folder")


def test_predicting_a_folder_writes_an_slp_referencing_its_images(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    background = scene._background(rng)
    centers, angles = scene.trajectory(6)
    frames = np.stack([scene.render(c, a, background) for c, a in zip(centers, angles)])
    names = [f"frame{i}.png" for i in range(6)]
    paths = _write_images(tmp_path / "frames", frames, names)

    result = pipeline([SYNTHETIC_MODEL], device="cpu", batch_size=4).predict_to_file(
        tmp_path / "frames"
    )
    out = tmp_path / "frames.predictions.slp"
    assert result.output == out and result.counts.frames == 6
    labels = sio.load_slp(str(out))
    video = labels.video
    assert video.filename == [str(p.absolute()) for p in paths]
    assert video.shape == (6, scene.SIZE, scene.SIZE, 1)
    assert len(labels) == 6 and all(len(lf.instances) == 1 for lf in labels)
    assert labels.provenance["source_video"] == str((tmp_path / "frames").resolve())
    np.testing.assert_array_equal(video[3][..., 0], frames[3])  # sleap-io reopens the images
