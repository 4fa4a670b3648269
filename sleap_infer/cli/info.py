"""``infer info``: what a trained model is, how big, how it was trained, and what is exported.

The facts are gathered below the CLI (:func:`~sleap_infer.runtimes.inventory.describe_models`);
this module only lays them out, one table per model, and writes the same dicts
as ``--json``. The checkpoint's sha256 goes on its own line under the table, so
a narrow terminal never wraps the hash in the middle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from sleap_infer.cli.console import console
from sleap_infer.cli.help import exit_codes
from sleap_infer.cli.options import parse_size

EPILOG = exit_codes(
    ok="described (and --json written)",
    failed="a model is missing or cannot be loaded, or --json cannot be written",
)

ModelDirs = Annotated[
    list[Path],
    typer.Argument(
        metavar="MODEL_DIR",
        help="Model directories (or their best.ckpt / training_config.yaml; SLEAP 1.x "
        "folders too), described one after another; give a top-down pair together so "
        "each finds the exports in the other's folder.",
        show_default=False,
    ),
]

JsonOption = Annotated[
    Path | None,
    typer.Option(
        "--json",
        metavar="PATH",
        help="Also write the same facts as JSON (never over an input; a file that is not "
        "such a report of ours needs --overwrite).",
        show_default=False,
    ),
]
OverwriteJson = Annotated[
    bool,
    typer.Option("--overwrite", help="Let --json replace an existing file that is not ours."),
]
INFO_SCHEMA = "sleap_infer.model_info/1"


def info(
    model: ModelDirs,
    input_size: Annotated[
        str | None,
        typer.Option(
            metavar="HxW",
            help="Frame size to count FLOPs at when a model's config has no max_height/"
            "max_width (SLEAP 1.x models often have none); crop and tiled models ignore it.",
            show_default=False,
        ),
    ] = None,
    json_path: JsonOption = None,
    overwrite: OverwriteJson = False,
) -> None:
    """Describe trained models: type, backbone size and FLOPs, skeleton, preprocessing,
    heads, training metrics, exports and the checkpoint's sha256."""
    from sleap_infer import __version__
    from sleap_infer.runtimes.inventory import describe_models
    from sleap_infer.writers.side_files import check_side_file, model_inputs, write_json

    if json_path is not None:
        check_side_file(
            json_path, "--json", INFO_SCHEMA, overwrite=overwrite, inputs=model_inputs(model)
        )
    frame_size = None if input_size is None else parse_size(input_size, "--input-size")
    with console.status("Loading...", spinner="dots"):
        facts = describe_models(model, frame_size)
    for described in facts:
        console.print(model_table(described))
        checkpoint = described["checkpoint"]
        console.print(
            f"sha256 {escape(str(checkpoint['file']))}: {checkpoint['sha256']}",
            highlight=False,
            soft_wrap=True,
        )
    if json_path is not None:
        payload = {"schema": INFO_SCHEMA, "sleap_infer": __version__, "models": facts}
        failure = f"--json {json_path}: cannot write the model facts"
        write_json(json_path, payload, failure, schema=INFO_SCHEMA, overwrite=overwrite)
        console.print(f"facts -> {escape(str(json_path))}", highlight=False, soft_wrap=True)


# ------------------------------------------------------------------ the table
def _count(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def _flops(flops: dict[str, Any]) -> str:
    given = flops["input"]
    if flops["total"] is None:
        return f"unknown ({given['why_unknown']})"
    shape = "x".join(str(d) for d in given["shape"])
    note = "; sized by --input-size" if given["size_from"] == "--input-size" else ""
    return (
        f"{flops['total'] / 1e9:.3g} GFLOPs per {shape} {given['kind']} ({flops['counts']}{note})"
    )


def _value(value: Any) -> str:
    """As the training config writes it: ``true``, ``1.5``, ``3,3,9,3``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(map(_value, value))
    return str(value)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _settings(settings: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in settings.items():
        if isinstance(value, dict):
            out += _settings(value, f"{prefix}{key}.")
        elif key != "type" and value is not None:
            out.append(f"{prefix}{key} {_value(value)}")
    return out


def _parameters(facts: dict[str, Any]) -> str:
    text = f"{_count(facts['parameters'])} (backbone {_count(facts['backbone_parameters'])})"
    declared = facts["config_total_params"]
    if declared is not None and declared != facts["parameters"]:
        text += f"; the training config says {_count(declared)}"
    return text


def _channels(pre: dict[str, Any]) -> str:
    if pre["ensure_rgb"]:
        return "RGB (ensure_rgb)"
    if pre["ensure_grayscale"]:
        return "grayscale (ensure_grayscale)"
    return f"as the video has them; the network takes {pre['input_channels']}"


def _input_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    pre = facts["preprocessing"]
    size = "any (no max_height/max_width)"
    if pre["max_height"] is not None and pre["max_width"] is not None:
        size = f"{pre['max_height']}x{pre['max_width']} (frames resized and padded to it)"
    strides = ", ".join(map(str, pre["output_strides"])) or "-"
    rows = [
        ("input scale", f"{pre['input_scale']:g}"),
        ("max size", size),
        ("channels", _channels(pre)),
        ("crop size", "-" if pre["crop_size"] is None else str(pre["crop_size"])),
        ("anchor part", pre["anchor_part"] or "none (bounding-box centre)"),
        ("strides", f"max {pre['max_stride']}, output {strides}"),
    ]
    if pre["tiling"] is not None:
        tiling = pre["tiling"]
        rows.append(("tiling", f"tile {tiling['tile_size']}, overlap {tiling['overlap']}"))
    return rows


def _skeleton_rows(skeleton: dict[str, Any]) -> list[tuple[str, str]]:
    edges = ", ".join(f"{a}->{b}" for a, b in skeleton["edges"]) or "none"
    symmetries = ", ".join(f"{a}<->{b}" for a, b in skeleton["symmetries"]) or "none"
    nodes = skeleton["nodes"]
    return [
        (
            "skeleton",
            f"{skeleton['name']}: {_plural(len(nodes), 'node')}, "
            f"{_plural(len(skeleton['edges']), 'edge')}",
        ),
        ("nodes", ", ".join(nodes) or "none"),
        ("edges", edges),
        ("symmetries", symmetries),
    ]


def _head(head: dict[str, Any]) -> str:
    where = "one vector" if head["output_stride"] is None else f"stride {head['output_stride']}"
    if head["levels"]:
        where = "strides " + ",".join(map(str, head["levels"]))
    sigmoid = ", sigmoid" if head["activation"] == "sigmoid" else ""
    return f"{head['name']} ({head['section']}): {head['channels']} ch, {where}{sigmoid}"


def _log(log: dict[str, Any] | None) -> str:
    if log is None:
        return "none (no training_log.csv)"
    if "error" in log:
        return f"{log['file']}: {log['error']}"
    text = _plural(log["epochs"], "epoch")
    if log["best_val_loss"] is not None:
        text += f", best val_loss {log['best_val_loss']:.4g} at epoch {log['best_epoch']}"
    last = [
        f"{name} {log[key]:.4g}"
        for name, key in (("train", "last_train_loss"), ("val", "last_val_loss"))
        if log[key] is not None
    ]
    return text + (f"; last {', '.join(last)}" if last else "")


def _metrics(entry: dict[str, Any]) -> str:
    if "error" in entry:
        return f"{entry['file']}: {entry['error']}"
    numbers = [f"{k} {v:.4g}" for k, v in entry["headline"].items() if v is not None][:6]
    return f"{entry['split']} ({entry['file']}): " + (", ".join(numbers) or "no known metrics")


def _export(entry: dict[str, Any]) -> str:
    if entry["input_shape"] is None:
        return f"{entry['path']}: unreadable ({entry['why_not']})"
    shape = "x".join(map(str, entry["input_shape"]))
    state = "ready" if entry["usable"] else entry["why_not"]
    kinds = "+".join(entry["formats"])
    where = "cache" if entry["where"] == "cache" else "next to the model"
    return f"{kinds} {shape} {entry['precision']}, {where}, {state}: {entry['path']}"


def _training_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    metrics = facts["training"]["metrics"]
    exports = facts["exports"]
    none_yet = "none (infer export, or --backend onnx|trt on first use)"
    checkpoint = facts["checkpoint"]
    size = "?" if checkpoint["bytes"] is None else f"{checkpoint['bytes'] / 1e6:.2f} MB"
    return [
        ("training log", _log(facts["training"]["log"])),
        ("metrics", "\n".join(map(_metrics, metrics)) or "none (no metrics files)"),
        ("exports", "\n".join(map(_export, exports)) or none_yet),
        ("checkpoint", f"{checkpoint['file']}, {size} (sha256 below)"),
    ]


def model_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """``(label, value)`` rows of one model, in the order printed."""
    kind = facts["model_type"]
    if facts["trained_with"]:
        kind += f" (trained with {facts['trained_with']})"
    rows = [
        ("model type", kind),
        ("backbone", f"{facts['backbone']['type']}: {', '.join(_settings(facts['backbone']))}"),
        ("parameters", _parameters(facts)),
        ("FLOPs", _flops(facts["flops"])),
        *_skeleton_rows(facts["skeleton"]),
        *_input_rows(facts),
        ("heads", "\n".join(map(_head, facts["heads"]))),
        ("forward pass", "\n".join(facts["forward_pass"])),
    ]
    if facts["class_names"]:
        rows.append(("classes", ", ".join(facts["class_names"])))
    if facts["categories"]:
        rows.append(("box categories", ", ".join(facts["categories"])))
    return rows + _training_rows(facts)


def model_table(facts: dict[str, Any]) -> Table:
    table = Table(
        title=escape(facts["path"]), show_header=False, title_justify="left", highlight=False
    )
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for label, value in model_rows(facts):
        table.add_row(label, escape(value))
    return table
