"""``infer qc``: is last night's output good, and where is it wrong?

Reads prediction ``.slp`` files (ours, sleap-nn's, SLEAP's; no video needed), finds
events (identity swaps, jumps, low-confidence stretches, ...) and prints one row per
video. Files are written only when asked for, so a quick look never leaves litter:

* ``-o report.html``: the HTML report (one page; an index row per video for several);
* ``--json qc.json``: every event and summary (``QCResult.to_json`` layout);
* ``--suggest N``: N frames per video to label next (in the JSON and the page);
  ``--into labels.slp`` adds them as SLEAP suggestions to a copy of that project,
  written to ``-o NAME.slp`` (default ``labels.suggested.slp`` beside it).

``-o`` may be given twice; the suffix says which file it names (``.html`` the report,
``.slp`` the project copy). No output may be an input or the project, even with
``--overwrite``; an existing file is replaced only with ``--overwrite`` (the JSON also
when it is a qc JSON of ours). A file that cannot be read is one line and exit 1; the
other files are still checked and written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from sleap_infer.cli.console import console
from sleap_infer.cli.help import EXIT_FAILED, exit_codes
from sleap_infer.core.errors import OutputError, SleapInferError, UsageError

if TYPE_CHECKING:
    from sleap_infer.qc.records import QCResult, Suggestion, VideoData

QC_SCHEMA = "sleap_infer.qc/1"
EPILOG = exit_codes(
    ok="every file checked (and -o / --json written)",
    failed="a file could not be read, or an output could not be written",
)


def _pick_outputs(outputs: Sequence[Path], into: Path | None) -> tuple[Path | None, Path | None]:
    """(HTML report, project copy) from the ``-o`` values, by suffix."""
    html: Path | None = None
    project: Path | None = None
    for out in outputs:
        name = out.name.lower()
        if name.endswith((".html", ".htm")):
            if html is not None:
                raise UsageError(f"-o {out}: a second .html report; give one")
            html = out
        elif name.endswith(".slp"):
            if into is None:
                raise UsageError(
                    f"-o {out}: an .slp output is the suggested project copy; it needs "
                    "--into labels.slp (and --suggest N)"
                )
            if project is not None:
                raise UsageError(f"-o {out}: a second .slp output; give one")
            project = out
        else:
            raise UsageError(
                f"-o {out}: name the report .html (or, with --into, the project copy .slp)"
            )
    if into is not None and project is None:
        project = default_project_copy(into)
    return html, project


def default_project_copy(into: Path) -> Path:
    """``labels.slp`` -> ``labels.suggested.slp`` (``.pkg.slp`` keeps its double suffix)."""
    name = into.name
    stem = name[: -len(".pkg.slp")] if name.endswith(".pkg.slp") else into.stem
    suffix = ".pkg.slp" if name.endswith(".pkg.slp") else ".slp"
    return into.with_name(f"{stem}.suggested{suffix}")


def check_output(path: Path, option: str, inputs: Iterable[Path], overwrite: bool) -> None:
    """The side-file rule for the page and the project copy: never an input (even with
    ``--overwrite``), an existing file only with ``--overwrite``, a folder never."""
    from sleap_infer.writers.side_files import same_file

    where = f"{option} {path}"
    if path.is_dir():
        raise OutputError(f"{where}: is a folder; give a file name")
    for given in inputs:
        if same_file(path, given):
            raise UsageError(f"{where}: is an input of this run; give another name")
    if path.exists() and not overwrite:
        raise UsageError(f"{where}: exists; pass --overwrite to replace it, or give another name")


def results_table(result: QCResult) -> Table:
    """One row per video: file, video, frames, tracks, verdict (worst first)."""
    table = Table(header_style="bold")
    for name, justify in (
        ("file", "left"),
        ("video", "left"),
        ("frames", "right"),
        ("tracks", "right"),
        ("events/1000", "right"),
        ("verdict", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    rows = [(f, v) for f in result.files for v in f.videos]
    rows.sort(key=lambda fv: -float(fv[1].summary.get("severity", 0.0)))
    for f, v in rows:
        s = v.summary
        table.add_row(
            escape(Path(f.path).name),
            escape(Path(v.video).name),
            str(v.frames),
            str(s.get("tracks", "")),
            f"{float(s.get('flags_per_1000', 0.0)):.1f}",
            escape(str(s.get("verdict", ""))),
        )
    for f in result.files:  # read, but nothing to check: say so rather than leave it out
        if not f.videos:
            table.add_row(escape(Path(f.path).name), "-", "0", "", "", "no labelled frames")
    return table


def write_report(result: QCResult, data: list[list[VideoData]], path: Path) -> None:
    """The HTML page, as one error line when it cannot be written."""
    from sleap_infer.qc.html import write_html

    try:
        write_html(result, data, path)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write the report ({exc.strerror or exc})") from None


def _write_outputs(
    result: QCResult,
    data: list[list[VideoData]],
    html: Path | None,
    json_path: Path | None,
    project: Path | None,
    into: Path | None,
    overwrite: bool,
) -> None:
    """The files asked for, each with its one ``->`` line; a hint when none was."""
    from sleap_infer.writers.side_files import write_json

    if json_path is not None:
        payload = {"schema": QC_SCHEMA, **result.to_json()}
        write_json(
            json_path,
            payload,
            f"--json {json_path}: cannot write the qc results",
            schema=QC_SCHEMA,
            overwrite=overwrite,
        )
        console.print(f"qc results -> {escape(str(json_path))}", highlight=False, soft_wrap=True)
    if html is not None:
        write_report(result, data, html)
        console.print(f"report -> {escape(str(html))}", highlight=False, soft_wrap=True)
    if project is not None and into is not None:
        from sleap_infer.qc.suggest import write_suggestions

        by_video: dict[str, list[Suggestion]] = {}
        for f in result.files:
            for v in f.videos:
                by_video.setdefault(v.video, []).extend(v.suggestions)
        counts = write_suggestions(into, project, by_video, overwrite=overwrite)
        console.print(
            f"suggestions -> {escape(str(project))} ({counts['added']} added, "
            f"{counts['already']} already there, {counts['videos_added']} videos added)",
            highlight=False,
            soft_wrap=True,
        )
    if html is None and json_path is None and project is None:
        console.print(
            "[dim]nothing written: -o report.html for the report, --json PATH for the events[/]",
            highlight=False,
        )


def qc(
    predictions: Annotated[
        list[Path],
        typer.Argument(
            metavar="PRED.slp...",
            help="Prediction files (.slp: ours, sleap-nn's or SLEAP's).",
            show_default=False,
        ),
    ],
    output: Annotated[
        list[Path] | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="report.html: write the HTML report. With --into, NAME.slp: the suggested "
            "project copy (default: <project>.suggested.slp). Give -o twice for both.",
            show_default=False,
        ),
    ] = None,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json",
            metavar="PATH",
            help="Write every event, summary and suggestion as JSON.",
            show_default=False,
        ),
    ] = None,
    suggest: Annotated[
        int,
        typer.Option(metavar="N", min=0, help="Rank N frames per video to label next (0: none)."),
    ] = 0,
    into: Annotated[
        Path | None,
        typer.Option(
            "--into",
            metavar="labels.slp",
            help="Add the --suggest frames as SLEAP suggestions to a copy of this project "
            "(the project itself is never changed).",
            show_default=False,
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace existing -o / --json files.")
    ] = False,
) -> None:
    """Check prediction files: identity swaps, jumps, low confidence; frames to label next."""
    from sleap_infer.qc.run import run_qc
    from sleap_infer.writers.side_files import check_side_file

    html, project = _pick_outputs(output or [], into)
    if into is not None:
        if suggest <= 0:
            raise UsageError("--into: give --suggest N, the number of frames to add")
        if not into.is_file():
            raise UsageError(f"--into {into}: no such file")
    inputs = [*predictions, *([into] if into is not None else [])]
    if html is not None:
        check_output(html, "-o", inputs, overwrite)
    if project is not None:
        check_output(project, "-o", inputs, overwrite)
    if json_path is not None:
        made = [p for p in (html, project) if p is not None]
        check_side_file(
            json_path, "--json", QC_SCHEMA, overwrite=overwrite, inputs=inputs, outputs=made
        )
    failed: list[str] = []

    def on_error(path: Path, exc: SleapInferError) -> None:
        failed.append(str(path))
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)

    with console.status("Checking predictions...", spinner="dots"):
        result, data = run_qc(predictions, suggest=suggest, on_error=on_error)
    if result.files:
        console.print(results_table(result))
    if result.files:
        _write_outputs(result, data, html, json_path, project, into, overwrite)
    if failed:
        raise typer.Exit(EXIT_FAILED)


def report_path(output: Path) -> Path:
    """Where ``predict --report`` puts an output's page: ``x.slp`` -> ``x.qc.html``
    (``x.pkg.slp`` -> ``x.qc.html``)."""
    name = output.name
    stem = name[: -len(".pkg.slp")] if name.endswith(".pkg.slp") else output.stem
    return output.with_name(f"{stem}.qc.html")


def reports_after_predict(outputs: Iterable[Path], overwrite: bool) -> bool:
    """``predict --report``: the qc page beside each ``.slp`` this run wrote. An existing
    page is replaced only with ``--overwrite``; a failure is one line. True when every
    page was written."""
    from sleap_infer.qc.run import run_qc

    ok = True
    outputs = list(outputs)
    slps = [out for out in outputs if out.name.lower().endswith(".slp")]
    if outputs and not slps:
        console.print(
            "[yellow]note:[/] --report: no .slp output in this run (qc reads .slp files)",
            highlight=False,
        )
    for out in slps:
        page = report_path(out)
        try:
            check_output(page, "--report", [out], overwrite)
            result, data = run_qc([out])
            write_report(result, data, page)
        except SleapInferError as exc:
            console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            ok = False
            continue
        summary = result.files[0].videos[0].summary if result.files[0].videos else {}
        verdict = escape(str(summary.get("verdict", "no frames")))
        console.print(
            f"qc report -> {escape(str(page))}: {verdict}", highlight=False, soft_wrap=True
        )
    return ok
