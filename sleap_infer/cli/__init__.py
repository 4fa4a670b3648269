"""The ``infer`` command line: predict, track, eval, render, export, bench, info, system.

Help is Typer's plain (click) help, not its rich panels: at 80 columns the
panels cut option names with an ellipsis, plain help wraps (see :mod:`.help`).
"""

from __future__ import annotations

import re
import sys
from typing import Annotated

import typer
from rich.markup import escape

from sleap_infer import __version__
from sleap_infer.cli import bench as bench_cmd
from sleap_infer.cli import eval as eval_cmd
from sleap_infer.cli import export as export_cmd
from sleap_infer.cli import info as info_cmd
from sleap_infer.cli import predict as predict_cmd
from sleap_infer.cli import render as render_cmd
from sleap_infer.cli import system as system_cmd
from sleap_infer.cli import track as track_cmd
from sleap_infer.cli.console import console
from sleap_infer.cli.help import EXIT_FAILED, EXIT_INTERRUPTED, HelpCommand
from sleap_infer.vocab.errors import SleapInferError

app = typer.Typer(
    name="infer",
    help="Fast batch pose prediction for sleap-nn models (torch, ONNX Runtime, TensorRT).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    epilog="Exit codes: 0 ok, 1 a video, model or device failed, 2 bad usage or options, "
    "130 interrupted. 'infer COMMAND --help' for each command's options.",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sleap_infer {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    """Fast batch pose prediction for sleap-nn models."""


app.command(
    no_args_is_help=True,
    cls=HelpCommand,
    short_help="Predict poses on videos: .slp, NWB, analysis HDF5 or CSV.",
    epilog=predict_cmd.EPILOG,
)(predict_cmd.predict)
app.command(
    no_args_is_help=True,
    cls=HelpCommand,
    short_help="Re-track a prediction .slp (ours or sleap-nn's) without a model.",
    epilog=track_cmd.EPILOG,
)(track_cmd.track)
app.command(
    "eval",
    no_args_is_help=True,
    cls=HelpCommand,
    short_help="Score predictions against ground truth (OKS mAP/mAR, PCK, distances).",
    epilog=eval_cmd.EPILOG,
)(eval_cmd.eval_cmd)
app.command(
    no_args_is_help=True,
    cls=HelpCommand,
    short_help="Draw predictions over their video (mp4, or one frame as PNG).",
    epilog=render_cmd.EPILOG,
)(render_cmd.render)
app.command(
    no_args_is_help=True,
    cls=HelpCommand,
    short_help="Export a model to ONNX / TensorRT, decoding in the graph.",
    epilog=export_cmd.EPILOG,
)(export_cmd.export)
app.command(
    no_args_is_help=True,
    cls=HelpCommand,
    short_help="Benchmark backends x batch sizes: speed, memory, accuracy.",
    epilog=bench_cmd.EPILOG,
)(bench_cmd.bench)
app.command(
    no_args_is_help=True,
    cls=HelpCommand,
    short_help="Describe models: type, size, FLOPs, skeleton, training metrics, exports.",
    epilog=info_cmd.EPILOG,
)(info_cmd.info)
app.command(
    cls=HelpCommand,
    short_help="Versions, devices, and which runtimes can run here (and why not).",
    epilog=system_cmd.EPILOG,
)(system_cmd.system)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: every error is one red line and a non-zero exit code.

    Typer runs in non-standalone mode, so its usage errors (unknown options,
    invalid choices) come back here too and are printed the same way as our
    own :class:`SleapInferError`: ``error: <what and where>``, exit code 2.
    """
    try:
        code = app(args=argv, prog_name="infer", standalone_mode=False)
    except SleapInferError as exc:
        _fail(str(exc), exc.exit_code)
    except typer.TyperException as exc:  # usage errors found while parsing the command line
        _fail(_usage_message(exc), exc.exit_code)
    except typer.Abort:
        _fail("aborted", EXIT_FAILED)
    except KeyboardInterrupt:  # outside a batch (e.g. while loading the model)
        console.print("[yellow]interrupted[/]")
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> None:
    if message:  # empty: help was printed instead (a command given no arguments)
        # escape: messages may hold brackets (e.g. "sleap-infer[tensorrt]") that rich would eat.
        console.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def _usage_message(exc: typer.TyperException) -> str:
    """Typer's text as one line: ``--backend: 'caffe' is not one of 'torch', 'onnx', 'trt'.``"""
    message = " ".join(exc.format_message().split())
    bad_value = re.match(r"Invalid value for '([^']+)'[^:]*: (?:Value error, )?(.*)", message)
    return f"{bad_value[1]}: {bad_value[2]}" if bad_value else message
