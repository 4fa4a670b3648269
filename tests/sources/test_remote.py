"""http(s):// video inputs (sleap-nn's remote ``--data_path``): read over HTTP range
requests with a bounded cache, frames equal to the local file's, one line per failure."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from sleap_infer.core.errors import UsageError, VideoError
from sleap_infer.sources import remote
from sleap_infer.sources.inputs import expand_inputs
from sleap_infer.sources.open import open_video

from remote_server import serve

SMALL = remote.RemoteOptions(block_size=16 << 10, max_blocks=3, timeout_s=5)


@pytest.fixture(autouse=True)
def _options(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets its own remote options; none leak into the next test."""
    monkeypatch.setenv(remote._ENV, "{}")


@pytest.fixture
def video(shared: Path) -> Path:
    return shared / "videos" / "small_robot.mp4"


def test_range_file_reads_what_the_file_holds_with_a_bounded_cache(video: Path) -> None:
    data = video.read_bytes()
    with serve(video.parent) as (base, state):
        f = remote.RangeFile(f"{base}/{video.name}", SMALL)
        assert f.size == len(data)
        f.seek(-100, io.SEEK_END)
        assert f.read(200) == data[-100:]  # a read past the end stops at it
        for offset in (0, 50_000, 17, 300_000, 16_383):
            f.seek(offset)
            assert f.read(40_000) == data[offset : offset + 40_000]
            assert len(f._blocks) <= SMALL.max_blocks  # never the whole file in memory
    ranges = [r for _, r in state.requests]
    assert all(r is not None and r.startswith("bytes=") for r in ranges)  # no whole-file GET


def test_url_frames_equal_the_local_files(video: Path) -> None:
    remote.configure(SMALL)
    local = open_video(video)
    with serve(video.parent) as (base, _):
        reader = open_video(f"{base}/{video.name}?sig=abc")
        assert str(reader.info.path) == f"{base}/{video.name}?sig=abc"
        assert (reader.info.n_frames, reader.info.height) == (166, local.info.height)
        picked = list(range(0, 166, 9))
        for (i, a), (j, b) in zip(reader.iter_frames(picked), local.iter_frames(picked)):
            assert i == j
            np.testing.assert_array_equal(a, b)


def test_a_dropped_connection_is_tried_again(video: Path) -> None:
    with serve(video.parent, drop_after=1000, drops=2) as (base, state):
        f = remote.RangeFile(f"{base}/{video.name}", SMALL)
        assert f.read() == video.read_bytes()
        assert state.drops == 0


def test_a_connection_that_keeps_dropping_is_one_line(video: Path) -> None:
    with serve(video.parent, drop_after=1000, drops=100) as (base, _):
        f = remote.RangeFile(f"{base}/{video.name}", SMALL)
        with pytest.raises(VideoError, match=r"^http://127\.0\.0\.1:\d+/small_robot\.mp4: bytes "):
            f.read()


@pytest.mark.parametrize(
    ("name", "required", "message"),
    [
        ("nothing.mp4", {}, "HTTP 404 Not Found"),
        ("small_robot.mp4", {"Authorization": "Bearer t"}, "HTTP 403 Forbidden"),
    ],
)
def test_http_errors_are_one_line_naming_the_url_without_its_query(
    video: Path, name: str, required: dict[str, str], message: str
) -> None:
    with serve(video.parent, required=required) as (base, _), pytest.raises(VideoError) as err:
        open_video(f"{base}/{name}?token=secret")
    assert str(err.value) == f"{base}/{name}: {message}"


def test_a_server_that_does_not_answer_is_one_line(video: Path) -> None:
    remote.configure(remote.RemoteOptions(timeout_s=0.3))
    with serve(video.parent, delay=1.0) as (base, _), pytest.raises(VideoError) as err:
        open_video(f"{base}/{video.name}")
    assert str(err.value) == f"{base}/{video.name}: no answer in 0.3 s"


def test_headers_go_with_every_request(video: Path) -> None:
    remote.configure(remote.RemoteOptions(headers={"Authorization": "Bearer t"}))
    with serve(video.parent, required={"Authorization": "Bearer t"}) as (base, _):
        assert open_video(f"{base}/{video.name}").info.n_frames == 166


@pytest.mark.parametrize("mode", ["download", "cache", "filecache", "blockcache"])
def test_every_stream_mode_reads_the_same_bytes(video: Path, mode: str) -> None:
    options = remote.RemoteOptions(stream_mode=mode)
    with (
        serve(video.parent) as (base, state),
        remote.open_url(base + "/" + video.name, options) as f,
    ):
        assert f.read() == video.read_bytes()
    whole = [r for _, r in state.requests if r is None]
    assert bool(whole) == (mode != "blockcache")  # only blockcache never downloads it whole


def test_options_are_checked_in_sleap_nns_words() -> None:
    assert remote.parse_headers('{"Authorization": "Bearer t"}') == {"Authorization": "Bearer t"}
    with pytest.raises(UsageError, match="^--headers must be a JSON object string"):
        remote.parse_headers("Authorization: t")
    with pytest.raises(UsageError, match="^--headers JSON must be an object"):
        remote.parse_headers("[1]")
    with pytest.raises(UsageError, match="^--stream-mode 'fast': expected one of auto, "):
        remote.check_stream_mode("fast")


def test_a_url_input_is_one_task_named_by_its_url() -> None:
    url = "https://example.org/data/v.mp4?sig=1"
    (item,) = expand_inputs([url])
    assert str(item.path) == url and item.problem is None
    assert remote.as_url(Path(url)) == url  # what Path makes of it is undone
    assert remote.file_name(url) == "v.mp4"
    (project,) = expand_inputs(["https://example.org/p.slp"])
    assert "download it first" in (project.problem or "")
