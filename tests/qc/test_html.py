"""The qc HTML report: one self-contained page, index worst first, charts, events, thumbnails.

The inputs are built here by hand (a small synthetic tracked scene and its events), so the
page is tested apart from the event finders. One test opens the page in headless
Chromium and checks it logs nothing to the console and paints something.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from sleap_infer.qc.html import MAX_THUMBNAILS, render_html, write_html
from sleap_infer.qc.records import Event, FileReport, QCResult, VideoData, VideoReport

from conftest import SHARED

NODES = ["head", "thorax", "abdomen"]
EDGES = [(0, 1), (1, 2)]
CENTERED_PAIR = SHARED / "videos" / "centered_pair_small.mp4"


def scene(
    n_frames: int = 300,
    n_tracks: int = 3,
    video: str = "missing_video.mp4",
    seed: int = 0,
    size: float = 384.0,
    points: np.ndarray | None = None,
) -> VideoData:
    """Animals random-walking in a ``size`` px arena (or at ``points``), some points missing."""
    rng = np.random.default_rng(seed)
    if points is None:
        steps = rng.normal(0, 1.5, (n_frames, n_tracks, 2)).cumsum(axis=0)
        centers = size / 2 + steps + rng.uniform(-size / 3, size / 3, (1, n_tracks, 2))
        centers = np.clip(centers, 30, size - 30)
        offsets = np.array([[0.0, -12.0], [0.0, 0.0], [0.0, 12.0]])
        points = centers[:, :, None, :] + offsets[None, None]
    else:
        points = points.copy()
        n_frames, n_tracks = points.shape[:2]
    frames = np.arange(n_frames, dtype=np.int64)
    scores = np.clip(rng.normal(0.85, 0.05, (n_frames, n_tracks, len(NODES))), 0, 1)
    present = np.ones((n_frames, n_tracks), dtype=bool)
    present[: n_frames // 5, n_tracks - 1] = False  # the last track is born late
    if n_tracks > 1:
        present[n_frames // 2 + 7 :: 13, 0] = False  # and the first flickers
    scores[n_frames // 3 : n_frames // 3 + 30, 0] = 0.2  # a low-confidence stretch
    points[~present] = np.nan
    scores[~present] = 0.0
    drop = rng.random((n_frames, n_tracks, len(NODES))) < 0.03
    points[drop] = np.nan
    scores[drop] = 0.0
    return VideoData(
        video=video,
        video_index=0,
        frames=frames,
        n_frames=n_frames,
        tracked=True,
        track_names=[f"track_{k}" for k in range(n_tracks)],
        node_names=list(NODES),
        edges=list(EDGES),
        points=points,
        point_scores=scores,
        instance_scores=np.where(present, scores.mean(axis=2), 0.0),
        present=present,
        max_tracks=n_tracks,
    )


@functools.cache
def flies(n_frames: int = 200) -> np.ndarray:
    """Head, thorax, abdomen of the two flies of centered_pair_small.mp4, found by threshold.

    The two largest bright blobs of each frame, their long axis as the body, matched to
    the previous frame's thorax: good enough that thumbnails show points on the animals.
    """
    import scipy.ndimage as ndi
    import sleap_io as sio

    video = sio.load_video(str(CENTERED_PAIR))
    pts = np.full((n_frames, 2, 3, 2), np.nan)
    prev: np.ndarray | None = None
    try:
        for f in range(n_frames):
            img = np.asarray(video[f])[..., 0]
            lab, m = ndi.label(img > 120)
            if m < 2:
                continue
            sizes = ndi.sum(np.ones_like(img), lab, range(1, m + 1))
            found = []
            for b in np.argsort(sizes)[-2:] + 1:
                ys, xs = np.nonzero(lab == b)
                xy = np.stack([xs, ys], 1).astype(np.float64)
                w, vec = np.linalg.eigh(np.cov(xy.T))
                axis = vec[:, -1] * np.sqrt(w[-1]) * 1.6
                c = xy.mean(axis=0)
                found.append(np.stack([c + axis, c, c - axis]))
            here = np.stack(found)
            if prev is not None and np.linalg.norm(here[0, 1] - prev[0, 1]) > np.linalg.norm(
                here[1, 1] - prev[0, 1]
            ):
                here = here[::-1]
            pts[f] = prev = here
    finally:
        video.close()
    return pts


def events_for(data: VideoData, n: int = 6, seed: int = 0) -> list[Event]:
    """A mix of every kind of event, at frames spread over the video."""
    rng = np.random.default_rng(seed)
    names = data.track_names
    last = int(data.frames[-1])
    out = [
        Event("low_confidence", last // 3, last // 3 + 29, [names[0]], 0.9, [], "scores ~0.2"),
        Event("track_born", last // 5, last // 5, [names[-1]], 0.6, [], "appeared mid-arena"),
        Event("bad_frames", 5, 6, [], 1.0, [], "2 frames could not be decoded"),
    ]
    kinds = ["identity_swap", "jump", "implausible_length", "too_many_instances"]
    for i in range(n):
        f = int(rng.integers(0, last))
        kind = kinds[i % len(kinds)]
        tracks = (
            [names[0], names[1 % len(names)]]
            if kind == "identity_swap"
            else []
            if kind == "too_many_instances"
            else [names[i % len(names)]]
        )
        nodes = [NODES[i % 3]] if kind == "jump" else []
        out.append(Event(kind, f, f, tracks, float(rng.uniform(0.3, 1.0)), nodes, f"{kind} <#{i}>"))
    return out


def report(data: VideoData, events: list[Event], severity: float) -> VideoReport:
    counts: dict[str, int] = {}
    for e in events:
        counts[e.kind] = counts.get(e.kind, 0) + 1
    summary = {
        "verdict": f"{counts.get('identity_swap', 0)} likely identity swaps, "
        f"{counts.get('jump', 0)} jumps",
        "severity": severity,
        "counts": counts,
        "flags_per_1000": 1000 * len(events) / len(data.frames),
        "tracks": data.n_columns,
        "mean_score": 0.8,
        "missing_points": 0.03,
        "frames_with_instances": int(data.present.any(axis=1).sum()),
    }
    return VideoReport(data.video, len(data.frames), summary, events)


def two_file_result(with_video: bool = False) -> tuple[QCResult, list[list[VideoData]]]:
    """Two files: the first with a clean video, the second with a faulty one and a clean one.

    ``with_video``: the faulty video is centered_pair_small.mp4 with its two flies.
    """
    clean = scene(200, 2, "clean.mp4", seed=1)
    if with_video:
        # A real swap at frame 100 (the tracks trade flies) and a 40 px jump at 120.
        pts = flies().copy()
        pts[100:] = pts[100:, ::-1]
        pts[120, 1] += 40.0
        faulty = scene(video=str(CENTERED_PAIR), seed=2, points=pts)
    else:
        faulty = scene(400, 4, "missing_video.mp4", seed=2)
    other = scene(150, 1, "other.mp4", seed=3)
    clean_rep = report(clean, [], 0.0)
    clean_rep.summary["verdict"] = "nothing flagged"
    events = events_for(faulty, 12)
    if with_video:
        events += [
            Event(
                "identity_swap", 100, 100, ["track_0", "track_1"], 0.97, [], "tracks trade flies"
            ),
            Event("jump", 120, 120, ["track_1"], 0.95, [], "whole fly moved 40 px and back"),
        ]
    result = QCResult(
        [
            FileReport("a.predictions.slp", [clean_rep]),
            FileReport(
                "b.predictions.slp",
                [report(faulty, events, 7.5), report(other, [], 0.5)],
            ),
        ]
    )
    return result, [[clean], [faulty, other]]


def test_index_lists_videos_worst_first_and_links_sections(tmp_path: Path) -> None:
    result, data = two_file_result()
    out = tmp_path / "report.html"
    write_html(result, data, out)
    page = out.read_text()
    index = page[page.index('<table class="index"') : page.index("</table>")]
    links = re.findall(r'href="#(v\d-\d)"', index)
    assert links == ["v1-0", "v1-1", "v0-0"]  # severity 7.5, 0.5, 0.0
    for anchor in links:
        assert f'<section id="{anchor}">' in page
    # Sections follow the same order as the index.
    assert page.index('id="v1-0"') < page.index('id="v1-1"') < page.index('id="v0-0"')


def test_page_is_self_contained_and_escapes_text(tmp_path: Path) -> None:
    result, data = two_file_result()
    page = render_html(result, data)
    assert "<script" not in page.lower()
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched
    assert "@import" not in page and "url(http" not in page
    assert page.count("<svg") == 3 * 3  # three charts per video with frames
    assert "jump &lt;#1&gt;" in page and "jump <#1>" not in page
    assert "No thumbnails: the video (missing_video.mp4) is not on this machine." in page


def test_event_table_in_frame_order_with_frames_tracks_and_nodes() -> None:
    result, data = two_file_result()
    page = render_html(result, data)
    section = page[page.index('id="v1-0"') : page.index('id="v1-1"')]
    table = section[section.index('<table class="events"') :]
    frames = [int(m) for m in re.findall(r'<td class="n">(\d+)(?:&ndash;\d+)?</td><td>', table)]
    assert len(frames) == len(result.files[1].videos[0].events)
    assert frames == sorted(frames)
    low = next(e for e in result.files[1].videos[0].events if e.kind == "low_confidence")
    assert f"{low.frame_start}&ndash;{low.frame_end}" in table
    assert "identity swap" in table
    # Track names in their thumbnail colours (tab10: track_0 blue, track_1 orange).
    assert (
        '<span class="track" style="color:#1f77b4">track_0</span>, '
        '<span class="track" style="color:#ff7f0e">track_1</span>'
    ) in table
    assert ">head<" in table or ">thorax<" in table or ">abdomen<" in table


def test_headline_and_verdict_tone() -> None:
    result, data = two_file_result()
    page = render_html(result, data)
    faulty = page[page.index('id="v1-0"') : page.index('id="v1-1"')]
    assert '<p class="verdict bad">' in faulty  # it has identity swaps
    assert "likely identity swaps" in faulty
    assert "mean point score" in faulty and "0.800" in faulty
    clean = page[page.index('id="v0-0"') :]
    assert '<p class="verdict good">nothing flagged</p>' in clean
    assert "Nothing flagged." in clean


def test_summary_keys_missing_fall_back_to_the_arrays() -> None:
    """A report with an empty summary (e.g. from an older qc) still renders its numbers."""
    data = scene(120, 2)
    events = events_for(data, 2)
    rep = VideoReport(data.video, len(data.frames), {}, events)
    page = render_html(QCResult([FileReport("x.slp", [rep])]), [[data]])
    assert f"{len(events)} events flagged" in page
    assert "0.8" in page  # the mean point score, computed from point_scores


def test_untracked_and_empty_videos_render() -> None:
    data = scene(50, 2)
    data.tracked = False
    data.track_names = ["", ""]
    events = [Event("jump", 10, 10, ["#1"], 0.7, ["head"], "head moved 40 px and back")]
    empty = scene(10, 1)
    empty.frames = empty.frames[:0]
    empty.points = empty.points[:0]
    empty.point_scores = empty.point_scores[:0]
    empty.instance_scores = empty.instance_scores[:0]
    empty.present = empty.present[:0]
    empty.n_frames = None
    result = QCResult(
        [FileReport("u.slp", [report(data, events, 1.0), VideoReport("e.mp4", 0, {}, [])])]
    )
    page = render_html(result, [[data, empty]])
    assert "#1" in page
    assert "No labelled frames in this video." in page


def test_refuses_to_write_over_an_input(tmp_path: Path) -> None:
    result, data = two_file_result()
    pred = tmp_path / "a.predictions.slp"
    pred.write_bytes(b"precious")
    result.files[0].path = str(pred)
    with pytest.raises(ValueError, match="write over an input"):
        write_html(result, data, pred)
    assert pred.read_bytes() == b"precious"
    assert list(tmp_path.iterdir()) == [pred]  # no temporary left behind


def test_mismatched_data_is_refused(tmp_path: Path) -> None:
    result, data = two_file_result()
    with pytest.raises(ValueError, match="one VideoData per video"):
        write_html(result, data[:1], tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.skipif(not CENTERED_PAIR.exists(), reason="fixture video absent")
def test_thumbnails_when_the_video_is_there() -> None:
    data = scene(video=str(CENTERED_PAIR), seed=4, points=flies())
    events = events_for(data, 70, seed=4)  # more than MAX_THUMBNAILS
    page = render_html(QCResult([FileReport("p.slp", [report(data, events, 3.0)])]), [[data]])
    thumbs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(thumbs) == MAX_THUMBNAILS
    assert f"Thumbnails for the {MAX_THUMBNAILS} highest-score events" in page
    import base64

    assert all(base64.b64decode(t)[:8] == b"\x89PNG\r\n\x1a\n" for t in thumbs)
    # The lowest-score events are the ones without a thumbnail.
    rows = re.findall(
        r'<td class="n">([0-9.]+)</td><td>[^<]*</td><td class="thumb">(.*?)</td>', page
    )
    with_img = [float(s) for s, cell in rows if cell]
    without = [float(s) for s, cell in rows if not cell]
    assert min(with_img) >= max(without)


def test_a_large_video_renders_fast_and_small(tmp_path: Path) -> None:
    """10,000 frames x 10 tracks with ~100 events: seconds, and a page of a few hundred kB."""
    data = scene(10_000, 10, seed=5, size=1024.0)
    events = events_for(data, 100, seed=5)
    result = QCResult([FileReport("big.slp", [report(data, events, 9.0)])])
    t0 = time.perf_counter()
    write_html(result, [[data]], tmp_path / "big.html")
    elapsed = time.perf_counter() - t0
    size = (tmp_path / "big.html").stat().st_size
    assert elapsed < 15, elapsed  # ~1.5 s here; the bound leaves room for a busy CI box
    assert size < 600_000, size


def chromium() -> str | None:
    return shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )


def open_in_chromium(page: Path, screenshot: Path) -> list[str]:
    """Load ``page`` headless, screenshot it, and return the console lines it logged."""
    exe = chromium()
    assert exe is not None
    proc = subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            f"--screenshot={screenshot}",
            "--window-size=1280,2400",
            "--hide-scrollbars",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Chromium logs every console message (errors included) as INFO:CONSOLE; the page
    # has no script, so any such line is something the page did wrong.
    return [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


def not_blank(png: Path) -> bool:
    from matplotlib.image import imread

    img = imread(png)
    return img.shape[0] > 100 and float(img[..., :3].std()) > 0.02


@pytest.mark.skipif(chromium() is None, reason="no chromium on this machine")
def test_console_check_sees_errors(tmp_path: Path) -> None:
    """The check below can fail: a page that logs an error is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>console.error("boom")</script>x</body></html>')
    lines = open_in_chromium(bad, tmp_path / "bad.png")
    assert any("boom" in line for line in lines)


@pytest.mark.skipif(chromium() is None, reason="no chromium on this machine")
@pytest.mark.parametrize("with_video", [False, True])
def test_chromium_opens_the_report_without_console_errors(tmp_path: Path, with_video: bool) -> None:
    if with_video and not CENTERED_PAIR.exists():
        pytest.skip("fixture video absent")
    result, data = two_file_result(with_video)
    out = tmp_path / "report.html"
    write_html(result, data, out)
    shot = tmp_path / "report.png"
    assert open_in_chromium(out, shot) == []
    assert shot.exists() and not_blank(shot)


def test_report_gets_the_usual_permissions_and_replaces_its_own_page(tmp_path: Path) -> None:
    """Written via a temporary beside it, yet readable like any file the user makes."""
    result, data = two_file_result()
    out = tmp_path / "report.html"
    out.write_text("an older report")
    write_html(result, data, out)
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_an_unreadable_video_costs_only_the_thumbnails(tmp_path: Path) -> None:
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video at all")
    data = scene(60, 2, str(broken))
    page = render_html(
        QCResult([FileReport("p.slp", [report(data, events_for(data), 1.0)])]), [[data]]
    )
    assert f"No thumbnails: {broken} could not be read" in page
    assert 'src="data:image/png' not in page
    assert page.count("<svg") == 3


@pytest.mark.skipif(not CENTERED_PAIR.exists(), reason="fixture video absent")
def test_event_frames_past_the_video_end_are_counted_not_fatal() -> None:
    data = scene(video=str(CENTERED_PAIR), seed=4, points=flies())
    events = [
        Event("jump", 10, 10, ["track_0"], 0.9, ["head"], "ok"),
        Event("jump", 5000, 5000, ["track_0"], 0.8, ["head"], "past the end"),
    ]
    page = render_html(QCResult([FileReport("p.slp", [report(data, events, 1.0)])]), [[data]])
    assert page.count('src="data:image/png') == 1
    assert "1 could not be made: their frames did not decode." in page


def test_thumbnail_trails_follow_the_involved_tracks_around_the_event() -> None:
    """A swapped track's path spans both animals; a track with no points has no path."""
    from sleap_infer.qc.html import TRAIL, _trails

    data = scene(100, 2, seed=6)
    data.points[:, 0] = [10.0, 10.0]  # track 0 sits at (10, 10) ...
    data.points[50:, 0] = [90.0, 90.0]  # ... and at (90, 90) from frame 50: a swap
    data.points[:, 1] = np.nan
    trails = _trails(data, 50, [0, 1])
    assert list(trails) == [0]
    assert len(trails[0]) == 2 * TRAIL + 1
    assert {tuple(p) for p in trails[0]} == {(10.0, 10.0), (90.0, 90.0)}


def test_a_video_with_frames_but_no_instances_renders() -> None:
    """Labelled frames, zero columns (nothing found anywhere): charts still draw, no warning."""
    data = scene(50, 1)
    data.points = data.points[:, :0]
    data.point_scores = data.point_scores[:, :0]
    data.instance_scores = data.instance_scores[:, :0]
    data.present = data.present[:, :0]
    data.track_names = []
    events = [Event("bad_frames", 3, 3, [], 1.0, [], "frame 3 did not decode")]
    page = render_html(
        QCResult([FileReport("k0.slp", [VideoReport(data.video, 50, {}, events)])]), [[data]]
    )
    assert page.count("<svg") == 3
    assert "frame 3 did not decode" in page


def test_charts_span_the_predicted_part_of_a_long_video() -> None:
    """Predictions on frames 0-199 of 1,100: the axis is those frames, and the page says so."""
    from sleap_infer.qc.plots import frame_span

    part = scene(200, 2)
    part.n_frames = 1100
    assert frame_span(part) == (0, 200)
    page = render_html(QCResult([FileReport("p.slp", [report(part, [], 0.0)])]), [[part]])
    assert "The charts show frames 0&ndash;199 of the video's 1100" in page
    most = scene(200, 2)
    most.n_frames = 300  # two thirds covered: the whole video, trailing empty frames shown
    assert frame_span(most) == (0, 300)
    unknown = scene(200, 2)
    unknown.n_frames = None
    unknown.frames = unknown.frames + 50
    assert frame_span(unknown) == (0, 250)


def test_long_track_names_are_cut_on_the_charts_only() -> None:
    data = scene(60, 2)
    data.track_names = ["mouse_female_left_cage_3", "track_1"]
    events = [Event("jump", 10, 10, ["mouse_female_left_cage_3"], 0.9, [], "")]
    page = render_html(QCResult([FileReport("p.slp", [report(data, events, 1.0)])]), [[data]])
    assert "mouse_female_\u2026" in page  # chart tick labels
    assert ">mouse_female_left_cage_3</span>" in page  # the event table, in full


def test_ids_are_unique_and_every_reference_resolves() -> None:
    """Twelve inlined charts, some identical: no id twice, every ``url(#id)`` defined."""
    result, data = two_file_result()
    result.files.append(result.files[0])  # the same file twice: identical charts
    data.append(data[0])
    page = render_html(result, data)
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r"url\(#([^)]+)\)", page)) | set(re.findall(r'href="#([^"]+)"', page))
    assert refs and refs <= set(ids)


def test_long_event_lists_are_capped_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import sleap_infer.qc.html as page_module

    monkeypatch.setattr(page_module, "MAX_TABLE_ROWS", 5)
    data = scene(200, 2)
    events = events_for(data, 20)
    page = render_html(QCResult([FileReport("p.slp", [report(data, events, 1.0)])]), [[data]])
    table = page[page.index('<table class="events"') :]
    assert table.count("<tr><td><span") == 5
    assert f"{len(events) - 5} more events are not listed here" in page
    assert "at the event frame" not in page  # no video: no thumbnail column


def test_matplotlib_is_imported_only_when_a_report_is_drawn() -> None:
    """`import sleap_infer.qc.html` (what the CLI loads) does not pay matplotlib's import."""
    import sys

    code = "import sys, sleap_infer.qc.html; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_instances_and_no_events_draw_an_empty_timeline_without_a_warning() -> None:
    """Zero tracks and nothing flagged: the timeline has no row at all (semantic-segmentation
    outputs read this way); matplotlib used to warn about a singular y axis here."""
    data = scene(20, 1)
    data.points = data.points[:, :0]
    data.point_scores = data.point_scores[:, :0]
    data.instance_scores = data.instance_scores[:, :0]
    data.present = data.present[:, :0]
    data.track_names = []
    page = render_html(
        QCResult([FileReport("k1.slp", [VideoReport(data.video, 20, {}, [])])]), [[data]]
    )
    assert page.count("<svg") == 3
