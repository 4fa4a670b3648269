"""The ``infer`` command line: predict, track, eval, render, export, bench, info, system.

Help is Typer's plain (click) help, not its rich panels: at 80 columns the
panels cut option names with an ellipsis, plain help wraps (see :mod:`.help`, which
still groups predict's options under panel headings).
"""

from __future__ import annotations

import functools
import gc
import importlib
import re
import sys
from collections.abc import Iterable
from typing import Annotated, Any

import typer
import typer.main
from rich.markup import escape

from sleap_infer import __version__
from sleap_infer.cli import fast_exit, import_gc
from sleap_infer.cli.console import console
from sleap_infer.cli.help import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    INTERRUPT_HOOKS,
    HelpCommand,
    sigterm_as_interrupt,
)
from sleap_infer.core import startup
from sleap_infer.core.errors import Interrupted, SleapInferError, plain

# name: (module, function, short help, no_args_is_help). Each command's module is imported
# only when a command line names it (or asks for the list): the others' imports (torch,
# scipy, the bench and export machinery, ...) would only slow every other command's start.
COMMANDS: dict[str, tuple[str, str, str, bool]] = {
    "predict": (
        "predict",
        "predict",
        "Predict poses on videos: .slp, NWB, analysis HDF5 or CSV.",
        True,
    ),
    "track": (
        "track",
        "track",
        "Re-track a prediction .slp (ours or sleap-nn's) without a model.",
        True,
    ),
    "eval": (
        "eval",
        "eval_cmd",
        "Score predictions against ground truth (OKS mAP/mAR, PCK, distances).",
        True,
    ),
    "qc": (
        "qc",
        "qc",
        "Check predictions: identity swaps, jumps, low confidence; frames to label next.",
        True,
    ),
    "render": (
        "render",
        "render",
        "Draw predictions over their video (mp4, or one frame as PNG).",
        True,
    ),
    "export": (
        "export",
        "export",
        "Export a model to ONNX / TensorRT, decoding in the graph.",
        True,
    ),
    "bench": (
        "bench",
        "bench",
        "Benchmark backends x batch sizes: speed, memory, accuracy.",
        True,
    ),
    "info": (
        "info",
        "info",
        "Describe models: type, size, FLOPs, skeleton, training metrics, exports.",
        True,
    ),
    "system": (
        "system",
        "system",
        "Versions, devices, and which runtimes can run here (and why not).",
        False,
    ),
}


CONTEXT = {"help_option_names": ["-h", "--help"]}
QUIET = ("-q", "--quiet")
# Commands with a -q/--quiet option of their own (it also sets their progress display).
QUIET_OPTION = frozenset({"predict"})


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sleap_infer {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-v", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Fast batch pose prediction for sleap-nn models."""


def build_app(commands: Iterable[str] = COMMANDS) -> typer.Typer:
    """The ``infer`` app with ``commands`` (default: all of them), in the listed order."""
    built = typer.Typer(
        name="infer",
        help="Fast batch pose prediction for sleap-nn models (torch, ONNX Runtime, TensorRT).",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish)
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings=CONTEXT,
        epilog="Exit codes: 0 ok, 1 a video, model or device failed, 2 bad usage or options, "
        "130 interrupted. 'infer COMMAND --help' for each command's options; -q after any "
        "command prints only errors. sleap-nn's flag spellings work too "
        "(docs/from_sleap_nn.md).",
    )
    built.callback()(_root)
    for name in commands:
        module_name, function, short_help, no_args_is_help = COMMANDS[name]
        module = importlib.import_module(f"sleap_infer.cli.{module_name}")
        if hasattr(module, "on_interrupt"):
            INTERRUPT_HOOKS[name] = module.on_interrupt
        built.command(
            name,
            no_args_is_help=no_args_is_help,
            cls=HelpCommand,
            context_settings=CONTEXT,
            short_help=short_help,
            epilog=module.EPILOG,
        )(getattr(module, function))
    return built


def __getattr__(name: str) -> Any:
    """``app``: every command, built on first use (tests, ``typer.main.get_command``)."""
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _commands_for(args: list[str]) -> Iterable[str]:
    """Only the command the arguments name; all of them for ``--help``, ``--version``,
    no arguments or an unknown name (whose error lists the commands)."""
    if args and args[0] in COMMANDS:
        return (args[0],)
    return COMMANDS


def main(argv: list[str] | None = None) -> None:
    """Console entry point: every error is one red line and a non-zero exit code.

    Typer runs in non-standalone mode, so its usage errors (unknown options,
    invalid choices) come back here too and are printed the same way as our
    own :class:`SleapInferError`: ``error: <what and where>``, exit code 2.

    Without ``argv`` this is the process's own command line: the collector is held off
    while the command's module is imported and the imports' objects are frozen
    (:mod:`.import_gc`), and the process ends here: a command that succeeded ends
    without the interpreter's teardown where nothing can be lost by it
    (:mod:`.fast_exit`); otherwise the objects still alive are
    frozen out of the garbage collector first, so that the interpreter's exit does not
    trace torch's million objects once more (0.3-0.5 s on a 2-core machine; every output
    is closed by then). Callers passing ``argv`` (tests) keep their collector and their
    process as they were.

    SIGTERM is Ctrl-C from here on, for every command (:func:`.help.sigterm_as_interrupt`).
    """
    try:
        with sigterm_as_interrupt():
            _main(sys.argv[1:] if argv is None else list(argv), own_process=argv is None)
    except SystemExit as done:
        if argv is None and done.code in (0, None):
            console.errors_only = False
            fast_exit.exit_now()  # returns where only a normal exit is safe
        raise
    finally:
        console.errors_only = False  # -q is this call's; a caller in the same process prints
        if argv is None:
            gc.freeze()


def _main(args: list[str], own_process: bool = False) -> None:
    """``own_process``: this is the ``infer`` process, whose collector is held off while the
    command's module is imported (:mod:`.import_gc`)."""
    held = own_process and import_gc.hold()
    try:
        try:
            args = _own_spelling(args)
            app = build_app(_commands_for(args))
        finally:
            import_gc.release(held)
        startup.mark("cli_imported")
        code = app(args=args, prog_name="infer", standalone_mode=False)
    except Interrupted:
        _interrupted()
    except SleapInferError as exc:
        _fail(str(exc), exc.exit_code)
    except typer.TyperException as exc:  # usage errors found while parsing the command line
        if type(exc).__name__ == "NoArgsIsHelpError":  # a command alone: its help, as written
            sys.stderr.write(exc.format_message() + "\n")
            sys.exit(exc.exit_code)
        _fail(_usage_message(exc), exc.exit_code)
    except typer.Abort:
        _fail("aborted", EXIT_FAILED)
    except KeyboardInterrupt:  # outside a command (e.g. while parsing)
        _interrupted()
    sys.exit(code if isinstance(code, int) else 0)


def _own_spelling(args: list[str]) -> list[str]:
    """sleap-nn's flags in our spelling (:mod:`.sleap_nn_flags`), lists checked for commas,
    and ``-q`` taken out for commands without their own: the console prints only errors."""
    # Imported here, under main()'s SIGTERM handler: it brings numpy (a quarter second),
    # and a SIGTERM before any handler of ours exists kills the process (exit 143).
    from sleap_infer.cli import sleap_nn_flags

    console.errors_only = False  # a test may call main() again in the same process
    notes: list[str] = []
    sleap_nn_flags.check_switch_values(args, switch_options)
    args = sleap_nn_flags.translate(args, notes, value_options)
    sleap_nn_flags.check_lists(args)
    options = args[: args.index("--")] if "--" in args else args
    if any(token in QUIET for token in options[1:]):
        console.errors_only = True
        if args[0] not in QUIET_OPTION:
            args = [t for i, t in enumerate(args) if t not in QUIET or i >= len(options)]
    for line in notes:
        console.print(f"[cyan]note:[/] {escape(line)}", highlight=False, soft_wrap=True)
    return args


@functools.cache
def value_options(command: str) -> frozenset[str]:
    """The names of ``command``'s options that take a value (``-o``, ``--frames`` ...)."""
    click_command = typer.main.get_command(build_app([command]))
    params = click_command.commands[command].params  # type: ignore[attr-defined]
    return frozenset(
        name for p in params if p.param_type_name == "option" and not p.is_flag for name in p.opts
    )


@functools.cache
def switch_options(command: str) -> dict[str, str]:
    """``command``'s switches (options that take no value), each with its opposite
    (``--mask-cleanup``: ``--no-mask-cleanup`` and back; empty where there is none)."""
    if command not in COMMANDS:
        return {}
    click_command = typer.main.get_command(build_app([command]))
    params = click_command.commands[command].params  # type: ignore[attr-defined]
    found: dict[str, str] = {}
    for p in params:
        if p.param_type_name != "option" or not p.is_flag or p.name in ("help", "version"):
            continue
        on, off = list(p.opts), list(p.secondary_opts)
        found |= {name: off[0] if off else "" for name in on}
        found |= {name: on[0] for name in off}
    return found


def _interrupted() -> None:
    """One plain line (colour only on a terminal) and exit 130, whichever command it was;
    also under -q, which keeps the lines that say why the run did not finish."""
    console.errors_only = False
    console.print("[yellow]interrupted[/]", highlight=False)
    sys.exit(EXIT_INTERRUPTED)


def _fail(message: str, code: int) -> None:
    if message:  # empty: help was printed instead (a command given no arguments)
        # escape: messages may hold brackets (e.g. "sleap-infer[tensorrt]") that rich would eat;
        # plain: a library's message may carry its own colour codes.
        console.print(f"[red]error:[/] {escape(plain(message))}", highlight=False, soft_wrap=True)
    sys.exit(code)


def _usage_message(exc: typer.TyperException) -> str:
    """Typer's text as one line: ``--backend: 'caffe' is not one of 'torch', 'onnx', 'trt'.``"""
    message = " ".join(exc.format_message().split())
    bad_value = re.match(r"Invalid value for '([^']+)'[^:]*: (?:Value error, )?(.*)", message)
    return f"{bad_value[1]}: {bad_value[2]}" if bad_value else message
