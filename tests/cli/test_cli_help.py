"""Every ``--help`` page reads in full at 80 columns: nothing cut with an ellipsis, no
Python types, every option name whole, usage lines in the usual ``VIDEOS...`` form."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys

import pytest
import typer.main

from sleap_infer.cli import app

COMMANDS = {"": None, "predict": "VIDEOS...", "export": "MODEL_DIR...", "bench": "MODEL_DIR..."}
PAGE = "\f"  # between the help pages one process prints

RENDER = """
import sys
from sleap_infer.cli import main
for command in sys.argv[1:]:
    try:
        main([*command.split(), "--help"])
    except SystemExit as exc:
        assert exc.code == 0, exc.code
    print(end="\\f", flush=True)
"""


@functools.cache
def _pages(columns: str | None) -> dict[str, str]:
    """Every command's help from the real entry point in one process whose stdout is a
    pipe (not a terminal), with ``COLUMNS`` set or not (a SLURM job, ``| less``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    res = subprocess.run(
        [sys.executable, "-c", RENDER, *COMMANDS],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return dict(zip(COMMANDS, res.stdout.split(PAGE)))


def _help(command: str, columns: str | None) -> str:
    return _pages(columns)[command]


def _option_names(command: str) -> list[str]:
    click_app = typer.main.get_command(app)
    cmd = click_app.commands[command] if command else click_app  # type: ignore[attr-defined]
    return [
        name
        for p in cmd.params
        if p.param_type_name == "option" and not getattr(p, "hidden", False)
        for name in p.opts
    ]


@pytest.mark.parametrize("columns", ["80", "200", None], ids=["80", "200", "unset"])
@pytest.mark.parametrize("command", list(COMMANDS), ids=lambda c: c or "infer")
def test_help_is_whole_at_80_columns(command: str, columns: str | None) -> None:
    text = _help(command, columns)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert "…" not in text
    assert not re.search(r"<(bool|str|int|float|path|list\[)", text), text
    # Option names stand whole at the start of their row, as written on a command line.
    rows = [line.strip() for line in lines if line.lstrip().startswith("-")]
    listed = {name.rstrip(",") for row in rows for name in row.split() if name.startswith("-")}
    for name in [*_option_names(command), "--help"]:
        assert name in listed, (name, rows)
    usage = lines[0]
    assert "{" not in usage and "}" not in usage
    if COMMANDS[command]:
        assert usage == f"Usage: infer {command} [OPTIONS] {COMMANDS[command]}"
        assert re.search(r"^\s+2\s+bad usage or options$", text, re.M), text
        assert re.search(r"^\s+130\s+interrupted", text, re.M), text
    else:
        for name in ("predict", "export", "bench"):
            assert re.search(rf"^  {name} +[A-Z]", text, re.M), text
        assert "..." not in text.replace("[ARGS]...", "")  # no shortened command summaries
        assert "2 bad usage or options" in text and "130 interrupted" in " ".join(text.split())


@pytest.mark.parametrize("command", ["predict", "export", "bench"])
def test_help_wraps_at_spaces_only(command: str) -> None:
    """textwrap splits hyphenated words ('--peak-threshold' after 'peak-') at line ends."""
    for columns in ("60", "80"):
        text = _help(command, columns)
        split = [line for line in text.splitlines() if re.search(r"[A-Za-z]-$", line)]
        assert not split, (columns, split)
    assert "(default: --peak-threshold)" in " ".join(_help("predict", "80").split())


def test_bf16_help_states_how_far_keypoints_move() -> None:
    text = " ".join(_help("predict", "80").split())
    assert "not exact: on an under-trained model 53 of 166 instances moved more than 5 px" in text
    assert "Check 'infer bench --bf16' on your model first" in text


def test_every_predict_option_is_in_a_panel() -> None:
    """predict's options stand under the headings of help.HELP_PANELS, every one of them
    (a new option left out of the table would fall back into a flat 'Options' list)."""
    from sleap_infer.cli.help import HELP_PANELS, PREDICT_PANELS

    command = typer.main.get_command(app).commands["predict"]  # type: ignore[attr-defined]
    visible = [p for p in command.params if p.param_type_name == "option" and not p.hidden]
    unplaced = [p.name for p in visible if p.rich_help_panel not in PREDICT_PANELS]
    assert not unplaced, unplaced
    stale = set(HELP_PANELS["predict"]) - {p.name for p in command.params}
    assert not stale, stale  # a table row for an option that no longer exists
    text = _help("predict", "80")
    headings = [line[:-1] for line in text.splitlines() if re.match(r"^[A-Z].*:$", line)]
    assert headings == ["Arguments", "Options", *PREDICT_PANELS], headings
    for panel in PREDICT_PANELS:
        assert any(p.rich_help_panel == panel for p in visible), panel
