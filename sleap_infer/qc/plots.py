"""The qc report's charts, drawn with matplotlib and returned as inline SVG text.

Why matplotlib: it is well kept, already beside sleap-io in most lab environments, and
its SVG backend writes plain markup with no JavaScript, so the page works offline, opens
in any browser without console errors, and is one file a person can e-mail. An
interactive library (plotly, bokeh) would inline megabytes of JavaScript per page.

Every chart aggregates frames into at most :data:`MAX_BINS` bins before drawing, so a
10,000-frame, 10-track video draws a few thousand vertices, not 100,000: the SVG stays
tens of kilobytes and renders in well under a second. A bin's value is the mean over the
labelled frames in it (instances per frame also shows the bin's min..max), which keeps a
one-frame dip visible as a widened band rather than averaging it away silently.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .records import Event, VideoData

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn (qc -o), not by infer
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_BINS = 600

# One colour and marker per event kind, shared by the timeline legend and the table badges.
KIND_STYLE: dict[str, tuple[str, str]] = {
    "identity_swap": ("#d62728", "X"),
    "jump": ("#ff7f0e", "^"),
    "low_confidence": ("#9467bd", "s"),
    "track_born": ("#2ca02c", ">"),
    "track_died": ("#7f7f7f", "<"),
    "too_many_instances": ("#8c564b", "D"),
    "implausible_length": ("#e377c2", "P"),
    "bad_frames": ("#17becf", "v"),
}
_OTHER_STYLE = ("#000000", "o")

TRACK_COLORS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]

_WIDTH_IN = 11.0


def kind_style(kind: str) -> tuple[str, str]:
    """The (colour, marker) of an event kind; unknown kinds are black dots."""
    return KIND_STYLE.get(kind, _OTHER_STYLE)


def track_color(k: int) -> str:
    return TRACK_COLORS[k % len(TRACK_COLORS)]


def column_labels(data: VideoData) -> list[str]:
    """Track names, or ``#k`` for the columns of an untracked file (the events' naming)."""
    return [name if name else f"#{k}" for k, name in enumerate(data.track_names)] + [
        f"#{k}" for k in range(len(data.track_names), data.n_columns)
    ]


def _short(name: str, n: int = 14) -> str:
    """A track name cut to fit the fixed left margin (the event table has it in full)."""
    return name if len(name) <= n else name[: n - 1] + "\u2026"


def frame_span(data: VideoData) -> tuple[int, int]:
    """``[lo, hi)`` of the time axis: the whole video, unless the file covers little of it.

    Frames without instances at the start or end of a video say something (the animals
    were not found), so the axis is the whole video when its length is known. But a run
    on a part of it (``--frames 0-199`` of 1,100) would leave the charts five-sixths
    empty: when the labelled frames span less than half the video, the axis is their span
    (the section's heading says which frames).
    """
    if len(data.frames) == 0:
        return 0, max(int(data.n_frames or 0), 1)
    first, last = int(data.frames.min()), int(data.frames.max()) + 1
    if data.n_frames and data.n_frames >= last:
        if last - first >= int(data.n_frames) / 2:
            return 0, int(data.n_frames)
        return first, last
    return 0, last


def _bins(data: VideoData) -> tuple[np.ndarray, np.ndarray, int]:
    """Each labelled row's bin, the bins' left frame edges, and the bin count."""
    lo, hi = frame_span(data)
    span = hi - lo
    n_bins = min(MAX_BINS, span)
    edges = lo + np.arange(n_bins + 1) * span / n_bins
    idx = ((data.frames - lo) * n_bins // span).astype(np.int64)
    return np.clip(idx, 0, n_bins - 1), edges, n_bins


# Fixed margins (inches), the same for every chart, so the three charts of a section
# share one frame axis on screen: frame 500 is at the same x in each, and an event on
# the timeline lines up with the dip above it. The right margin holds the colour bar
# and the timeline's legend.
_LEFT_IN = 0.8
_RIGHT_IN = 1.55
_BOTTOM_IN = 0.45
_TOP_IN = 0.08


def _figure(height: float) -> tuple[Figure, Axes]:
    # The object API, not pyplot: no global figure registry, nothing to close, and no
    # GUI backend is ever picked, so this runs headless and in threads.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(_WIDTH_IN, height), dpi=96)
    fig.subplots_adjust(
        left=_LEFT_IN / _WIDTH_IN,
        right=1 - _RIGHT_IN / _WIDTH_IN,
        bottom=_BOTTOM_IN / height,
        top=1 - _TOP_IN / height,
    )
    return fig, fig.add_subplot()


_SVG_START = re.compile(r"^.*?(<svg\b)", re.S)


def _svg(fig: Figure, tag: str) -> str:
    """The figure as inline ``<svg>`` markup (no XML prolog, no DOCTYPE)."""
    import matplotlib

    buf = io.StringIO()
    # Text as text (not glyph paths): a third of the size, and searchable in the page.
    # A fixed hash salt keeps ids (clip paths) the same from run to run.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "sleap-infer-qc"}):
        fig.savefig(buf, format="svg")
    text = _SVG_START.sub(r"\1", buf.getvalue(), count=1)
    # Let the page scale it to the column width.
    text = re.sub(r'(<svg\b[^>]*?) width="[^"]*" height="[^"]*"', r"\1", text, count=1)
    return _own_ids(text, tag)


def _own_ids(svg: str, tag: str) -> str:
    """Prefix the SVG's ids with ``tag-``, unique per chart in the page.

    Every matplotlib SVG names its groups ``axes_1``, ``patch_2``, ...; inlined side by
    side, those repeat, and a page with duplicate ids is invalid HTML (a ``url(#...)``
    would resolve to the first chart's element).
    """
    tag = f"{tag}-"
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{tag}\1"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{tag}\1)", svg)
    return re.sub(r'xlink:href="#([^"]+)"', rf'xlink:href="#{tag}\1"', svg)


def _style_axes(ax: Axes, lo: int, hi: int) -> None:
    ax.set_xlim(lo, hi)
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#e5e5e5", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=8)


def instances_plot(data: VideoData, tag: str = "instances") -> str:
    """Instances per frame over time: mean per bin, with the bin's min..max as a band."""
    from matplotlib.ticker import MaxNLocator

    lo, hi = frame_span(data)
    fig, ax = _figure(1.7)
    counts = data.present.sum(axis=1).astype(np.float64)
    if len(data.frames):
        idx, edges, n_bins = _bins(data)
        n = np.bincount(idx, minlength=n_bins)
        mean = np.bincount(idx, weights=counts, minlength=n_bins) / np.maximum(n, 1)
        top = np.full(n_bins, -np.inf)
        low = np.full(n_bins, np.inf)
        np.maximum.at(top, idx, counts)
        np.minimum.at(low, idx, counts)
        has = n > 0
        centers = (edges[:-1] + edges[1:]) / 2
        mean[~has] = np.nan
        top[~has] = np.nan
        low[~has] = np.nan
        ax.fill_between(
            centers,
            low,
            top,
            color="#1f77b4",
            alpha=0.25,
            linewidth=0,
            step="mid",
            label="min..max in bin",
        )
        ax.plot(centers, mean, color="#1f77b4", linewidth=1.0, drawstyle="steps-mid", label="mean")
    if data.max_tracks:
        ax.axhline(
            data.max_tracks,
            color="#d62728",
            linestyle="--",
            linewidth=0.8,
            label=f"max tracks ({data.max_tracks})",
        )
    _style_axes(ax, lo, hi)
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("instances", fontsize=9)
    ax.set_xlabel("frame", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _svg(fig, tag)


def track_scores(data: VideoData) -> tuple[np.ndarray, np.ndarray]:
    """Per (bin, column) mean point score over present points, NaN where no instance."""
    idx, edges, n_bins = _bins(data)
    visible = ~np.isnan(data.points[..., 0]) & data.present[..., None]
    sums = np.where(visible, data.point_scores, 0.0).sum(axis=2)  # (F, K)
    cnt = visible.sum(axis=2).astype(np.float64)
    out = np.full((n_bins, data.n_columns), np.nan)
    for k in range(data.n_columns):
        s = np.bincount(idx, weights=sums[:, k], minlength=n_bins)
        c = np.bincount(idx, weights=cnt[:, k], minlength=n_bins)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, k] = np.where(c > 0, s / np.maximum(c, 1), np.nan)
    return out, edges


def score_plot(data: VideoData, tag: str = "scores") -> str:
    """Mean point score over time, one row per track, as a heat strip (grey: no instance).

    A strip per track stays legible at 10 tracks x 10,000 frames, where ten overlapping
    lines would not; the colour scale is fixed to 0..1 so reports compare by eye.
    """
    from matplotlib import colormaps

    lo, hi = frame_span(data)
    labels = column_labels(data)
    k = max(data.n_columns, 1)
    fig, ax = _figure(0.75 + 0.22 * k)
    if len(data.frames) and data.n_columns:
        scores, edges = track_scores(data)
        cmap = colormaps["viridis"].with_extremes(bad="#eeeeee")
        mesh = ax.pcolormesh(
            edges,
            np.arange(k + 1) - 0.5,
            np.ma.masked_invalid(scores.T),
            cmap=cmap,
            vmin=0.0,
            vmax=1.0,
            shading="flat",
            rasterized=True,
        )
        box = ax.get_position()
        cax = fig.add_axes((box.x1 + 0.12 / _WIDTH_IN, box.y0, 0.12 / _WIDTH_IN, box.height))
        bar = fig.colorbar(mesh, cax=cax)
        bar.ax.tick_params(labelsize=7)
        bar.set_label("score", fontsize=8)
    ax.set_xlim(lo, hi)
    ax.set_ylim(k - 0.5, -0.5)
    ax.set_yticks(range(data.n_columns), [_short(x) for x in labels[: data.n_columns]], fontsize=7)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("frame", fontsize=9)
    return _svg(fig, tag)


def _runs(rows_present: np.ndarray, frames: np.ndarray, gap: int) -> list[tuple[int, int]]:
    """``(start, length)`` frame runs where a column is present, merging gaps <= ``gap``."""
    where = np.flatnonzero(rows_present)
    if len(where) == 0:
        return []
    f = frames[where]
    breaks = np.flatnonzero(np.diff(f) > gap + 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [len(f) - 1]])
    return [(int(f[s]), int(f[e]) - int(f[s]) + 1) for s, e in zip(starts, ends, strict=True)]


def event_rows(data: VideoData, events: Sequence[Event]) -> list[list[int]]:
    """Each event's timeline rows: its tracks' columns, or the top "video" row (-1)."""
    index = {name: k for k, name in enumerate(column_labels(data))}
    rows = []
    for e in events:
        ks = [index[t] for t in e.tracks if t in index]
        rows.append(ks or [-1])
    return rows


def timeline_plot(data: VideoData, events: Sequence[Event], tag: str = "timeline") -> str:
    """Each track's lifetime as bars, events marked on their tracks, by kind, with a legend.

    Gaps shorter than one bin are merged so a flickering track draws as one bar, not
    thousands; events with no track (bad frames, too many instances) sit on a "video" row.
    """
    lo, hi = frame_span(data)
    labels = column_labels(data)
    k = data.n_columns
    has_video_row = any(r == [-1] for r in event_rows(data, events))
    rows = k + (1 if has_video_row else 0)
    offset = 1 if has_video_row else 0
    fig, ax = _figure(0.75 + 0.28 * max(rows, 1))
    gap = max(1, (hi - lo) // MAX_BINS)
    for c in range(k):
        runs = _runs(data.present[:, c], data.frames, gap)
        # Lifetimes in one quiet colour, so the events' colours are the ones that stand out.
        ax.broken_barh(runs, (c + offset - 0.3, 0.6), facecolors="#c9d6e3", linewidth=0)
    seen: set[str] = set()
    # Frame spans (low confidence) as a thin bar on the row, point events as a marker.
    for e, ks in zip(events, event_rows(data, events), strict=True):
        color, marker = kind_style(e.kind)
        for c in ks:
            y = 0 if c < 0 else c + offset
            label = None if e.kind in seen else e.kind.replace("_", " ")
            seen.add(e.kind)
            if e.frame_end - e.frame_start >= gap:
                ax.plot(
                    [e.frame_start, e.frame_end + 1],
                    [y, y],
                    color=color,
                    linewidth=3.5,
                    solid_capstyle="butt",
                    label=label,
                )
            else:
                ax.plot(
                    [e.frame_start + 0.5],
                    [y],
                    linestyle="none",
                    marker=marker,
                    markersize=6,
                    markerfacecolor=color,
                    markeredgecolor="white",
                    markeredgewidth=0.5,
                    label=label,
                )
    names = (["video"] if has_video_row else []) + labels[:k]
    ax.set_yticks(range(rows), [_short(x) for x in names], fontsize=7)
    ax.set_ylim(max(rows, 1) - 0.5, -0.5)  # no tracks: one empty row, not a singular axis
    _style_axes(ax, lo, hi)
    ax.grid(False)
    ax.set_xlabel("frame", fontsize=9)
    if seen:
        handles, names_ = ax.get_legend_handles_labels()
        rank = {kind.replace("_", " "): i for i, kind in enumerate(KIND_STYLE)}
        pairs = sorted(zip(names_, handles, strict=True), key=lambda p: rank.get(p[0], 99))
        ax.legend(
            [h for _, h in pairs],
            [n for n, _ in pairs],
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
            frameon=False,
            borderaxespad=0.2,
        )
    return _svg(fig, tag)
