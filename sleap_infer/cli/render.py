"""``infer render``: draw a prediction file over its video, to eyeball a new model.

An H.264 video of the frames (or a ``--frames`` selection) with skeletons,
scores, masks and boxes in track colours, or one ``--frame`` as a PNG. No
model is needed; the frames come from the video the ``.slp`` names (or
``--video`` when that copy is elsewhere). Written atomically: a failed run
never leaves a half-written video.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from sleap_infer.cli.console import console
from sleap_infer.cli.help import exit_codes
from sleap_infer.core.errors import UsageError

if TYPE_CHECKING:
    from sleap_infer.render import RenderStats

EPILOG = exit_codes(
    ok="rendered and written",
    failed="the predictions or their video could not be read, or the output written",
)
DEFAULT_CRF = 25  # sleap_infer.render's default; repeated so --help needs no PyAV import


def default_output(predictions: Path, frame: int | None) -> Path:
    """``x.slp`` -> ``x.render.mp4``, or ``x.frame<N>.png`` for a still, next to the input."""
    name = predictions.name
    stem = name[: -len(".pkg.slp")] if name.lower().endswith(".pkg.slp") else predictions.stem
    suffix = ".render.mp4" if frame is None else f".frame{frame}.png"
    return predictions.with_name(stem + suffix)


def _check(
    output: Path,
    frame: int | None,
    frames: str | None,
    overwrite: bool,
    inputs: tuple[Path | None, ...] = (),
) -> None:
    """Still-or-video mix-ups, an input as the output (never, even with --overwrite), and
    an existing output, before anything is read."""
    from sleap_infer.writers.side_files import same_file

    for given in inputs:
        if given is not None and same_file(output, given):
            raise UsageError(f"{output}: the output would replace an input; pick another -o")
    if frame is not None and frames is not None:
        raise UsageError("--frame draws one still and --frames selects a video's frames: use one")
    is_png = output.suffix.lower() == ".png"
    if frame is not None and not is_png:
        raise UsageError(f"{output}: --frame writes a PNG; name the output *.png")
    if frame is None and is_png:
        raise UsageError(f"{output}: a PNG holds one frame; pick it with --frame N")
    if output.exists() and not overwrite:
        raise UsageError(f"{output}: exists; pass --overwrite to replace it")


def render(
    predictions: Annotated[
        Path,
        typer.Argument(metavar="PREDICTIONS", help="A .slp prediction file.", show_default=False),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="Video (.mp4, .mkv, .mov) or, with --frame, a .png. Default: "
            "<name>.render.mp4 or <name>.frame<N>.png next to the input.",
            show_default=False,
        ),
    ] = None,
    frames: Annotated[
        str | None,
        typer.Option(
            metavar="RANGES",
            help="Frames to render, e.g. '0-99,200' or '500-' (inclusive; default all).",
        ),
    ] = None,
    frame: Annotated[
        int | None,
        typer.Option("--frame", metavar="N", help="Draw this one frame as a PNG instead."),
    ] = None,
    crf: Annotated[
        int,
        typer.Option(
            metavar="N", min=0, max=51, help="H.264 quality: 0 lossless, higher is smaller."
        ),
    ] = DEFAULT_CRF,
    fps: Annotated[
        float | None,
        typer.Option(metavar="FPS", help="Frame rate of the output (default: the video's)."),
    ] = None,
    scale: Annotated[
        float,
        typer.Option(metavar="FACTOR", help="Resize the frames, e.g. 0.5 or 2."),
    ] = 1.0,
    video: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="Read the frames from this video or .pkg.slp instead of the one the "
            "predictions name (when that copy is elsewhere).",
            show_default=False,
        ),
    ] = None,
    video_index: Annotated[
        int,
        typer.Option(metavar="N", min=0, help="Which video of a multi-video .slp to draw."),
    ] = 0,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing output file.")
    ] = False,
) -> None:
    """Draw predictions (skeletons, scores, masks, boxes) over their video frames."""
    from sleap_infer.sources.frames import check_frames

    check_frames(frames)
    out = output if output is not None else default_output(predictions, frame)
    _check(out, frame, frames, overwrite, (predictions, video))
    if frame is not None:
        from sleap_infer.render import render_frame

        stats = render_frame(
            predictions, frame, out, scale=scale, video=video, video_index=video_index
        )
    else:
        stats = _render_with_progress(predictions, out, frames, crf, fps, scale, video, video_index)
    for line in stats.warnings:
        console.print(f"[yellow]warning:[/] {escape(line)}", highlight=False, soft_wrap=True)
    if stats.bad_frames:
        skipped = sum(run.count for run in stats.bad_frames)
        first = stats.bad_frames[0].describe()
        console.print(
            f"[yellow]warning:[/] {skipped} frame{'s' if skipped != 1 else ''} could not be "
            f"read and were left out (first: {escape(first)})",
            highlight=False,
            soft_wrap=True,
        )
    what = f"frame {frame}" if frame is not None else f"{stats.frames} frames"
    console.print(
        f"[green]rendered[/] {escape(str(predictions))}: {what}, {stats.annotated} with "
        f"predictions, {stats.instances} instances, {stats.width}x{stats.height}"
        + ("" if frame is not None else f" at {stats.fps:g} fps")
        + f" ({stats.seconds:.1f} s) -> {escape(str(out))}",
        highlight=False,
        soft_wrap=True,
    )


def _render_with_progress(
    predictions: Path,
    out: Path,
    frames: str | None,
    crf: int,
    fps: float | None,
    scale: float,
    video: Path | None,
    video_index: int,
) -> RenderStats:
    """:func:`render_video` under a progress bar (on stderr; gone once done)."""
    from sleap_infer.render import render_video

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"Rendering {escape(predictions.name)}", total=None)
        return render_video(
            predictions,
            out,
            frames,
            crf,
            fps,
            scale,
            on_frame=lambda: bar.advance(task),
            video=video,
            video_index=video_index,
            on_start=lambda total: bar.update(task, total=total),
        )
