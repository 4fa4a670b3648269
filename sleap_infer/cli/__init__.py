"""The ``infer`` command line: predict, export, bench."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from sleap_infer import __version__
from sleap_infer.cli.bench import bench
from sleap_infer.cli.export import export
from sleap_infer.cli.predict import predict
from sleap_infer.cli.progress import console
from sleap_infer.errors import SleapInferError

app = typer.Typer(
    name="infer",
    help="Fast batch pose prediction for sleap-nn models (torch, ONNX Runtime, TensorRT).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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


app.command(no_args_is_help=True)(predict)
app.command(no_args_is_help=True)(export)
app.command(no_args_is_help=True)(bench)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: user errors become one red line and a non-zero exit code.

    Typer/click handle usage errors and exit codes themselves (standalone mode);
    our own :class:`SleapInferError` propagates out of them and is printed here.
    """
    try:
        app(args=argv)
    except SleapInferError as exc:
        # escape: messages may hold brackets (e.g. "sleap-infer[tensorrt]") that rich would eat.
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # outside a batch (e.g. while loading the model)
        console.print("[yellow]interrupted[/]")
        sys.exit(130)
