"""sleap-nn 0.3.5's command lines run unchanged: each of the 226 flags of its ``predict``,
``export``, ``track`` and ``eval`` (``sleap_nn_0.3.5_flags.txt``, from their ``--help``) is
accepted with sleap-nn's meaning (the parsed options equal those of our own spelling) or
refused by name, with a reason, exit code 2."""

from __future__ import annotations

import contextlib
import functools
import io
import re
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import typer.main

from sleap_infer.cli import build_app, main, value_options
from sleap_infer.cli import sleap_nn_flags as snf
from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import NUMBER_RANGES, NumberRange
from sleap_infer.writers.registry import format_names, get_formats

FLAG_LIST = Path(__file__).with_name("sleap_nn_0.3.5_flags.txt")
DOC = Path(__file__).parents[2] / "docs" / "from_sleap_nn.md"
# Enough arguments for each command to parse (nothing runs: make_context only parses).
BASE = {
    "predict": ["predict", "v.mp4", "-m", "m"],
    "track": ["track", "p.slp"],
    "export": ["export", "m"],
    "eval": ["eval", "g.slp", "p.slp"],
}


def sleap_nn_flags() -> list[tuple[str, str]]:
    """(command, flag) for every spelling in the list (``--a,--b``, ``--x/--no-x``, ``-o, --o``)."""
    pairs = []
    for line in FLAG_LIST.read_text().splitlines():
        command, spec = line.split(maxsplit=1)
        for name in re.split(r"[\s,/]+", spec):
            if name and (command, name) not in pairs:
                pairs.append((command, name))
    return pairs


@functools.cache
def _command(name: str) -> Any:
    return typer.main.get_command(build_app([name])).commands[name]  # type: ignore[attr-defined]


def parse(args: list[str]) -> tuple[str, dict[str, Any], list[str]]:
    """What our command line makes of ``args``: its command and parsed options, and notes."""
    notes: list[str] = []
    args = snf.translate(args, notes, value_options)
    snf.check_lists(args)
    ctx = _command(args[0]).make_context(args[0], args[1:])
    return args[0], dict(ctx.params), notes


def _option(command: str, name: str) -> Any:
    """Our click option called ``name`` (Typer vendors click: matched by duck type)."""
    for param in _command(command).params:
        if param.param_type_name == "option" and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _sample(option: Any) -> list[str]:
    """A value for ``option`` that differs from its default (none for a flag)."""
    if option.is_flag:
        return []
    kind = option.type_descriptor.annotation
    default = option.default
    if isinstance(kind, type) and issubclass(kind, Enum):
        return [next(m.value for m in kind if m != default)]
    if kind is int:
        return [str((default or 1) + 2)]
    if kind is float:
        value = (default or 0.0) + 0.25
        if not NUMBER_RANGES.get(option.name, NumberRange()).holds(value):
            value = (default or 0.0) - 0.25  # a unit-range option near its top
        return [str(value)]
    return ["0.9,0.5"]  # a string: merge thresholds, frames, names all take it


def _check_alias(command: str, name: str, flag: snf.Flag) -> None:
    ours = flag.to.split()
    option = _option(command, ours[0])
    assert option is not None, f"{command} {name} -> {flag.to}: no such option of ours"
    value = ours[1:] or _sample(option)
    base = BASE[command]
    _, theirs, _ = parse([*base, name, *([] if ours[1:] else value)])
    _, mine, _ = parse([*base, *ours[:1], *value])
    _, default, _ = parse(base)
    assert theirs == mine, f"{command} {name}: parsed unlike {flag.to}"
    if not (option.is_flag and option.default is True):  # --user-labels-only: the default
        assert theirs != default, f"{command} {name}: changed nothing"


def _check(command: str, name: str) -> str:
    """Check one flag; returns how it is taken (for the counts)."""
    if name in ("-h", "--help"):
        with pytest.raises(SystemExit) as exit_, contextlib.redirect_stdout(io.StringIO()):
            main([command, name])
        assert exit_.value.code == 0
        return "ours"
    if command == "track" and name in snf.MODEL_FLAGS:  # sleap-nn's track with a model
        ran, parsed, _ = parse(["track", "v.mp4", name, "m"])
        assert (ran, parsed["tracking"], parsed["model"]) == ("predict", True, [Path("m")])
        return "aliased"
    table = snf.TABLES[command]
    flag = table.get(name)
    if command == "track" and flag is not None and flag.reason == snf.NEEDS_MODEL:
        with pytest.raises(UsageError, match=f"^{re.escape(name)}: only with -m"):
            parse([*BASE[command], name, "x"])
        return _check("predict", name)  # infer track -m runs infer predict --tracking
    if flag is None:  # spelt as ours
        option = _option(command, name)
        assert option is not None, f"{command} {name}: neither ours nor in the table"
        _, parsed, _ = parse([*BASE[command], name, *_sample(option)])
        assert parsed != parse(BASE[command])[1], f"{command} {name}: changed nothing"
        return "ours"
    if flag.kind == snf.REFUSED:
        with pytest.raises(UsageError, match=f"^{re.escape(name)}: .{{20}}"):
            parse([*BASE[command], name, "x"])
        return "refused"
    if flag.kind == snf.IGNORED:
        value = ["3"] if flag.takes_value else []
        _, parsed, notes = parse([*BASE[command], name, *value])
        assert parsed == parse(BASE[command])[1]
        assert notes and notes[0].startswith(f"{name}: ")
        return "ignored"
    if flag.kind == snf.POSITIONAL:
        base = [a for a in BASE[command] if not a.endswith((".mp4", ".slp"))]
        values = {"GROUND_TRUTH": "g.slp", "PREDICTIONS": "p.slp", "VIDEOS": "v.mp4"}
        extra = [a for a in BASE[command] if a.endswith((".mp4", ".slp")) and a != values[flag.to]]
        _, parsed, _ = parse([*base, *extra, name, values[flag.to]])
        _, mine, _ = parse(BASE[command])
        assert parsed == mine, f"{command} {name}: not the {flag.to} argument"
        return "aliased"
    if flag.kind == snf.VALUE:
        accepted = 0
        for value, tokens in flag.values.items():
            if isinstance(tokens, str):
                with pytest.raises(UsageError, match=f"^{re.escape(name)} {value}: "):
                    parse([*BASE[command], name, value])
                continue
            _, parsed, _ = parse([*BASE[command], name, value])
            assert parsed == parse([*BASE[command], *tokens])[1]
            accepted += 1
        return "aliased" if accepted else "refused"
    _check_alias(command, name, flag)
    return "aliased"


@pytest.mark.parametrize(("command", "name"), sleap_nn_flags())
def test_each_sleap_nn_flag_is_taken_or_refused_by_name(command: str, name: str) -> None:
    _check(command, name)


def test_the_list_is_whole_and_counted() -> None:
    assert len(FLAG_LIST.read_text().splitlines()) == 226
    counts: dict[str, int] = {}
    for command, name in sleap_nn_flags():
        how = _check(command, name)
        counts[how] = counts.get(how, 0) + 1
    assert sum(counts.values()) == len(sleap_nn_flags())
    assert DOC.exists()
    doc = DOC.read_text()
    for command, name in sleap_nn_flags():
        assert f"`{name}`" in doc, f"{command} {name} missing from {DOC.name}"


def test_values_and_what_follows_double_dash_are_never_rewritten() -> None:
    args = ["predict", "-o", "--batch_size", "v.mp4", "--batch_size=8", "--", "--frames"]
    assert snf.translate(args, value_options=value_options) == [
        "predict", "-o", "--batch_size", "v.mp4", "--batch-size", "8", "--", "--frames",
    ]  # fmt: skip


def test_arguments_given_as_flags_keep_their_order() -> None:
    for args in (
        ["eval", "-p", "p.slp", "-g", "g.slp"],
        ["eval", "g.slp", "--predicted_path", "p.slp"],
        ["eval", "--ground_truth_path=g.slp", "p.slp"],
    ):
        _, parsed, _ = parse(args)
        assert (parsed["ground_truth"], parsed["predictions"]) == (Path("g.slp"), Path("p.slp"))


def test_sleap_nn_command_lines_mean_what_they_meant() -> None:
    _, parsed, notes = parse(
        [
            "predict", "-i", "a.mp4", "--model_paths", "m1", "--model_paths", "m2",
            "--runtime", "tensorrt", "--batch_size", "8", "--integral_refinement", "none",
            "--output_format", "analysis_h5", "--output_format", "analysis_h5",
            "--no_empty_frames", "--tracking", "--tracking_window_size", "7",
            "--scoring_reduction", "robust_quantile", "--robust_best_instance", "0.9",
            "--gui", "--queue_maxsize", "8",
        ]
    )  # fmt: skip
    assert parsed["videos"] == ["a.mp4"] and parsed["model"] == [Path("m1"), Path("m2")]
    assert parsed["backend"].value == "trt" and parsed["batch_size"] == 8
    assert parsed["no_refine"]
    assert format_names(get_formats(parsed["output_format"])) == "analysis-h5"
    assert parsed["no_empty_frames"] and parsed["tracking"] and parsed["window_size"] == 7
    assert (parsed["reduction"], parsed["robust_quantile"]) == ("robust_quantile", 0.9)
    assert parsed["progress"].value == "json"
    assert notes == [
        "--queue_maxsize: infer's frame queue sizes itself; --queue_maxsize has no effect"
    ]


def test_an_unknown_value_lists_only_what_infer_takes() -> None:
    with pytest.raises(
        UsageError,
        match="^--tracker 'foo': choose one of classic, bytetrack, sort, botsort, ocsort,"
        " deepsort, strongsort, deepocsort, infer_bytetrack$",
    ):
        snf.translate(["predict", "--tracker", "foo"])
    # infer's own tracker passes under sleap-nn's spelling of the flag, on both commands
    for command in ("predict", "track"):
        translated = snf.translate([command, "--tracker", "infer_bytetrack"])
        assert translated[-2:] == ["--tracker", "infer_bytetrack"]


def test_several_output_formats_become_several_formats() -> None:
    """sleap-nn's repeated --output_format: each format, from one prediction pass (#28)."""
    args = snf.translate(["predict", "--output_format", "slp", "--output_format", "analysis_h5"])
    assert args == ["predict", "--format", "slp", "--format", "analysis-h5"]


def test_no_empty_frames_reaches_the_spec() -> None:
    from sleap_infer.pipeline.spec import bind

    assert bind(["m"], no_empty_frames=True).options.no_empty_frames
    assert not bind(["m"]).options.no_empty_frames


@pytest.mark.parametrize(
    "command", ["", "predict", "track", "eval", "render", "export", "bench", "info", "system"]
)
def test_dash_h_is_help(command: str) -> None:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_, contextlib.redirect_stdout(out):
        main([command, "-h"] if command else ["-h"])
    assert exit_.value.code == 0 and out.getvalue().startswith("Usage: infer")


@pytest.mark.parametrize(
    ("given", "formats", "fp16"),
    [
        (["-f", "tensorrt"], ("onnx", "trt"), False),
        (["--format", "both", "--precision", "fp16"], ("onnx", "trt"), True),
        (["--runtime", "trt"], ("onnx", "trt"), False),
        (["-f", "openvino"], ("onnx",), False),
        (["-f", "onnx", "--precision", "fp16"], ("onnx",), False),  # TensorRT's precision only
        (
            ["--opset-version", "18", "--input-height", "64", "--input-width", "96"],
            ("onnx",),
            False,
        ),
    ],
)
def test_export_format_names(
    monkeypatch: pytest.MonkeyPatch, given: list[str], formats: tuple[str, ...], fp16: bool
) -> None:
    import sleap_infer.export.exporter as exporter

    seen = []

    def capture(model, output, settings, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(settings)
        raise UsageError("captured")

    monkeypatch.setattr(exporter, "export_model", capture)
    with pytest.raises(SystemExit) as exit_:
        main(["export", "m", *given])
    assert exit_.value.code == 2 and (seen[0].formats, seen[0].fp16) == (formats, fp16)
    if "--input-height" in given:
        assert seen[0].frame_size == (64, 96) and seen[0].opset == 18


def markdown() -> str:
    """The table of ``docs/from_sleap_nn.md`` (``python tests/cli/test_sleap_nn_flags.py``)."""
    rows, counts = [], {}
    for command, name in sleap_nn_flags():
        how = _check(command, name)
        counts.setdefault(command, {}).setdefault(how, 0)
        counts[command][how] += 1
        flag = snf.TABLES[command].get(name)
        if command == "track" and name in snf.MODEL_FLAGS:
            ours = "runs `infer predict --tracking -m`"
        elif flag is not None and flag.reason == snf.NEEDS_MODEL:
            ours = "with -m: as in predict; without -m: refused (re-tracking runs no model)"
        elif flag is None:
            ours = "same"
        else:
            ours = flag.describe()
        rows.append(f"| {command} | `{name}` | {how} | {ours.replace('|', '/')} |")
    kinds = ("ours", "aliased", "ignored", "refused")
    totals = {k: sum(c.get(k, 0) for c in counts.values()) for k in kinds}
    tally = [
        "| command | spellings | " + " | ".join(kinds) + " |",
        "|---|---|" + "---|" * len(kinds),
        *(
            f"| {cmd} | {sum(c.values())} | " + " | ".join(str(c.get(k, 0)) for k in kinds) + " |"
            for cmd, c in counts.items()
        ),
        f"| all | {sum(totals.values())} | " + " | ".join(str(totals[k]) for k in kinds) + " |",
    ]
    return "\n".join(
        [
            *tally,
            "",
            "| command | sleap-nn flag | taken as | infer |",
            "|---|---|---|---|",
            *rows,
        ]
    )


if __name__ == "__main__":
    print(markdown())


# ------------------------------------------------------------ the last one counts (#45.6)
def _other(option: Any, value: str) -> str:
    """A second value for ``option``, unlike ``value`` (and valid for it)."""
    kind = option.type_descriptor.annotation
    if isinstance(kind, type) and issubclass(kind, Enum):
        return next(m.value for m in kind if m.value != value)
    if kind is int:
        return str(int(value) + 1)
    if kind is float:
        for step in (0.125, -0.125, 0.0625, -0.0625):
            if NUMBER_RANGES.get(option.name, NumberRange()).holds(float(value) + step):
                return str(float(value) + step)
    return "0.8,0.4"


def _single_valued() -> list[tuple[str, str]]:
    """(command, flag) of every sleap-nn flag that takes one value (not a list, a switch,
    or a refusal): given twice, click keeps the last one, in sleap-nn and here."""
    found = []
    for command, name in sleap_nn_flags():
        flag = snf.TABLES[command].get(name)
        if flag is None or flag.many or flag.kind not in (snf.ALIAS, snf.VALUE, snf.POSITIONAL):
            continue
        if command == "track" and name in snf.MODEL_FLAGS:
            continue
        found.append((command, name))
    return found


@pytest.mark.parametrize(("command", "name"), _single_valued())
def test_a_flag_given_twice_keeps_its_last_value(command: str, name: str) -> None:
    flag = snf.TABLES[command][name]
    base = BASE[command]
    if flag.kind == snf.POSITIONAL:
        base = [a for a in base if not a.endswith((".mp4", ".slp"))]
        # eval's other file stays an argument (its place keeps the order)
        extra = {"GROUND_TRUTH": ["p.slp"], "PREDICTIONS": ["g.slp"]}[flag.to]
        extra = extra if command == "eval" else []
        twice = parse([*base, *extra, name, "a.slp", name, "b.slp"])[1]
        assert twice == parse([*base, *extra, name, "b.slp"])[1]
        return
    if flag.kind == snf.VALUE:
        accepted = [v for v, t in flag.values.items() if not isinstance(t, str)]
        refusals = [v for v, t in flag.values.items() if isinstance(t, str)]
        for first in [*accepted, *refusals]:
            for last in accepted:
                twice = parse([*base, name, first, name, last])[1]
                assert twice == parse([*base, name, last])[1], f"{name} {first} {name} {last}"
        return
    ours = flag.to.split()
    option = _option(command, ours[0])
    if option.is_flag or ours[1:] or option.multiple:
        return  # a switch (checked below), or a list (every one counts, as in sleap-nn)
    (last,) = _sample(option)
    first = _other(option, last)
    twice = parse([*base, name, first, name, last])[1]
    assert twice == parse([*base, name, last])[1]
    assert twice != parse([*base, name, first])[1]


def _switch_pairs() -> list[tuple[str, str, str]]:
    """(command, --x, --no-x) of sleap-nn's switches that can be turned back off."""
    pairs = []
    for command, table in snf.TABLES.items():
        for name, flag in table.items():
            on = f"--{name[len('--no-') :]}"
            if not name.startswith("--no-") or on not in table:
                continue
            kinds = (flag.kind, table[on].kind)
            if snf.REFUSED not in kinds and kinds != (snf.IGNORED, snf.IGNORED):
                pairs.append((command, on, name))  # (export's --verify: both no-ops)
    return pairs


@pytest.mark.parametrize(("command", "on", "off"), _switch_pairs())
def test_a_switch_turned_on_and_off_ends_as_the_last_says(command: str, on: str, off: str) -> None:
    base = BASE[command]
    assert parse([*base, on, off])[1] == parse([*base, off])[1]
    assert parse([*base, off, on])[1] == parse([*base, on])[1]
    assert parse([*base, on, off])[1] != parse([*base, on])[1]


def test_integral_refinement_given_twice_keeps_the_last() -> None:
    """#45.6: ``none`` then ``integral`` refined nothing (the first value stuck)."""
    base = BASE["predict"]
    assert not parse([*base, "--integral_refinement", "none", "--integral_refinement", "integral"])[
        1
    ]["no_refine"]
    assert parse([*base, "--integral_refinement", "integral", "--integral_refinement", "none"])[1][
        "no_refine"
    ]
    # mixed with our own spelling: the last one counts too
    assert not parse([*base, "--no-refine", "--integral_refinement", "integral"])[1]["no_refine"]
    assert parse([*base, "--integral_refinement", "integral", "--no-refine"])[1]["no_refine"]
    # a refused value given before a good one is no error (click converts only the last)
    evals = BASE["eval"]
    first = ["--match_method", "mask", "--match_method", "oks"]
    assert parse([*evals, *first])[1] == parse([*evals, "--match-method", "oks"])[1]
    with pytest.raises(UsageError, match="^--match_method mask: "):
        parse([*evals, "--match_method", "oks", "--match_method", "mask"])
    # --embed (ours, as sleap-nn's): the last one counts
    assert parse([*base, "--embed", "true", "--embed", "false"])[1] == parse(base)[1]
    assert parse([*base, "--embed", "false", "--embed", "true"])[1]["embed"].value == "true"


def test_predict_tracking_without_a_model_retracks() -> None:
    """#44.4: sleap-nn's ``predict -i preds.slp -t`` (no model) re-tracks the file."""
    notes: list[str] = []
    args = ["predict", "-i", "p.slp", "-t", "--tracker", "bytetrack", "-o", "out.slp"]
    assert snf.translate(args, notes, value_options) == [
        "track", "--tracker", "bytetrack", "-o", "out.slp", "p.slp",
    ]  # fmt: skip
    assert notes == [snf.RETRACK_NOTE]
    ran, parsed, _ = parse(["predict", "--data_path", "p.slp", "--tracking", "--window-size", "3"])
    assert (ran, parsed["predictions"], parsed["window_size"]) == ("track", Path("p.slp"), 3)
    # a model-only flag there says why, and predict without -t still needs a model
    with pytest.raises(UsageError, match="^--batch_size: only with -m"):
        snf.translate(["predict", "-i", "p.slp", "-t", "--batch_size", "4"])
    assert snf.translate(["predict", "-i", "v.mp4"])[0] == "predict"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["predict", "v.mp4", "-m", "m", "--tracking", "false"],
            "--tracking false: --tracking takes no value; leave --tracking out to turn it off",
        ),
        (["predict", "v.mp4", "-m", "m", "-t", "True"], "-t True: -t takes no value; drop 'True'"),
        (
            ["predict", "v.mp4", "-m", "m", "--use_kalman", "no"],
            "--use_kalman no: --use_kalman takes no value; leave --use_kalman out",
        ),
        (
            ["predict", "v.mp4", "-m", "m", "--mask-cleanup", "off"],
            "--mask-cleanup off: --mask-cleanup takes no value; use --no-mask-cleanup",
        ),
        (
            ["eval", "g.slp", "p.slp", "--user_labels_only", "false"],
            "--user_labels_only false: --user_labels_only takes no value; use --all-labels",
        ),
        (["track", "p.slp", "-t", "1"], "-t 1: -t takes no value; drop '1'"),
    ],
)
def test_a_switch_given_a_value_is_refused(args: list[str], message: str) -> None:
    """#45.20: ``--tracking false`` turned tracking on and failed a video named 'false'."""
    from sleap_infer.cli import switch_options

    with pytest.raises(UsageError, match=f"^{re.escape(message)}"):
        snf.check_switch_values(args, switch_options)


def test_a_switch_before_an_existing_file_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sleap_infer.cli import switch_options

    monkeypatch.chdir(tmp_path)
    (tmp_path / "false").write_bytes(b"")
    snf.check_switch_values(["predict", "-m", "m", "--tracking", "false"], switch_options)
    snf.check_switch_values(["predict", "-m", "m", "-o", "false", "x.mp4"], switch_options)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["-o", "d/bu.slp"], ["-o", "d/bu.analysis.h5"]),
        (["--output_path", "d/bu.predictions.slp"], ["--output", "d/bu.analysis.h5"]),
        (["-o", "d/bu.h5"], ["-o", "d/bu.h5"]),  # a name of the format written: as it is
    ],
)
def test_analysis_only_output_is_named_from_the_slp_name_as_sleap_nn(
    given: list[str], expected: list[str]
) -> None:
    """sleap-nn's ``-o bu.slp --output_format analysis_h5`` writes only bu.analysis.h5."""
    args = ["predict", "-i", "v.mp4", "-m", "m", *given, "--output_format", "analysis_h5"]
    assert snf.translate(args, value_options=value_options) == [
        "predict", "-m", "m", *expected, "--format", "analysis-h5", "v.mp4",
    ]  # fmt: skip
    both = [*args, "--output_format", "slp"]  # with the .slp too, -o stays the .slp's name
    assert snf.translate(both, value_options=value_options)[3:5] == [
        "--output" if given[0] == "--output_path" else "-o",
        given[1],
    ]


def test_export_max_batch_size_sizes_the_engine_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """sleap-nn's export --max-batch-size: the dynamic-batch engine's largest batch (#46)."""
    import sleap_infer.export.exporter as exporter
    from sleap_infer.export.tensorrt_build import Profile

    seen = []

    def capture(model, output, settings, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(settings)
        raise UsageError("captured")

    monkeypatch.setattr(exporter, "export_model", capture)
    for given in (["--max-batch-size", "8"], []):
        with pytest.raises(SystemExit):
            main(["export", "m", "-f", "tensorrt", *given])
    small, default = seen
    assert (small.batch_profile, default.batch_profile) == ((1, 4, 8), (1, 4, 16))
    profile = Profile.for_input((1, 1, 64, 96), True, small.batch_profile)
    assert (profile.min[0], profile.opt[0], profile.max[0]) == (1, 4, 8)
    # the default keeps the cache keys made before the flag existed
    assert "max_batch" not in default.as_dict() and small.as_dict()["max_batch"] == 8
    assert Profile.for_input((1, 1, 8, 8), True, (1, 2, 2)).opt == (2, 1, 8, 8)
    with pytest.raises(SystemExit) as exit_:
        main(["export", "m", "--batch", "4", "--max-batch-size", "8"])
    assert exit_.value.code == 2
