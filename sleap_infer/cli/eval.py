"""``infer eval``: score a prediction file against ground truth, as ``sleap-nn eval`` does.

Same pairing, matching modes (OKS for poses, centroid distance for one point
per animal, COCO box AP for detectors) and metrics as sleap-nn 0.3.5 (see
:mod:`sleap_infer.evaluation`), so the numbers can be quoted side by side.
The headline numbers go to the terminal; ``--json`` keeps everything, in the
layout of sleap-nn's metrics ``.json``; ``--npz`` (sleap-nn's ``-s/--save_metrics``)
writes sleap-nn's pickled ``.npz`` and, as sleap-nn does, its ``.json`` sibling.
"""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from sleap_infer.cli.console import console
from sleap_infer.cli.help import exit_codes
from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import check_number

EVAL_SCHEMA = "sleap_infer.eval_metrics/1"


class MatchMethod(str, Enum):
    """sleap-nn's matching modes that infer eval scores (mask/semantic: refused)."""

    auto = "auto"
    oks = "oks"
    centroid = "centroid"
    bbox = "bbox"


class CentroidMethod(str, Enum):
    center_of_mass = "center_of_mass"
    bbox_center = "bbox_center"
    geometric_median = "geometric_median"
    anchor = "anchor"


class CentroidFallback(str, Enum):
    center_of_mass = "center_of_mass"
    bbox_center = "bbox_center"
    geometric_median = "geometric_median"


class BboxSource(str, Enum):
    auto = "auto"
    bboxes = "bboxes"
    instances = "instances"
    masks = "masks"


DEFAULT_MATCH_METHOD = MatchMethod.auto
DEFAULT_BBOX_SOURCE = BboxSource.auto
EPILOG = exit_codes(
    ok="scored (and --json / --npz written)",
    failed="a file could not be read, or --json / --npz could not be written",
)


def parse_stddev(text: str) -> float | list[float]:
    """``0.025`` (every node) or ``0.025,0.05,...`` (one per node, in skeleton order)."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise UsageError(
            f"--oks-stddev {text!r}: not a number or comma-separated numbers"
        ) from None
    for value in values:  # at parse time, before either file is read
        check_number("oks_stddev", value, "--oks-stddev")
    return values[0] if len(values) == 1 else values


def _number(value: float, unit: str) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:.2f} {unit}" if unit else f"{value:.4f}"


def metrics_table(metrics: dict[str, Any]) -> Table:
    """The headline numbers sleap-nn's eval logs, one row each."""
    from sleap_infer.evaluation import headline

    table = Table(header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for label, value, unit in headline(metrics):
        table.add_row(label, _number(value, unit))
    return table


def counts_line(metrics: dict[str, Any]) -> str:
    """What the numbers rest on: frames paired, instances matched, predictions left over."""
    counts = metrics["counts"]
    frames = counts["frame_pairs"]
    plural = "s" if frames != 1 else ""
    if "bbox_mAP" in metrics:
        return (
            f"{frames} frame{plural} with ground-truth boxes (from {counts['bbox_source']}), "
            f"{counts['gt_boxes']} ground-truth boxes, {counts['pred_boxes']} predicted"
        )
    if "detection_metrics" in metrics:
        return (
            f"{frames} frame{plural} paired, {counts['matched']} of {counts['gt_instances']} "
            f"ground-truth centroids matched, {counts['unmatched_pred']} false positives"
        )
    return (
        f"{frames} frame{plural} paired, {counts['matched']} of "
        f"{counts['gt_instances']} ground-truth instances matched, "
        f"{counts['unmatched_pred']} of {counts['pred_instances']} predictions unmatched "
        "(not counted by mAP, as in sleap-nn)"
    )


def eval_cmd(
    ground_truth: Annotated[
        Path,
        typer.Argument(
            metavar="GROUND_TRUTH", help="Labeled .slp (or .pkg.slp).", show_default=False
        ),
    ],
    predictions: Annotated[
        Path,
        typer.Argument(metavar="PREDICTIONS", help="Predicted .slp.", show_default=False),
    ],
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json",
            metavar="PATH",
            help="Also save every metric as JSON (sleap-nn's metrics .json layout).",
            show_default=False,
        ),
    ] = None,
    npz: Annotated[
        Path | None,
        typer.Option(
            "--npz",
            metavar="PATH",
            help="Also save the metrics as sleap-nn's eval -s does: a .npz holding one "
            "pickled 'metrics' dict (np.load(PATH, allow_pickle=True)['metrics'].item()), "
            "and its .json sibling (PATH with the suffix .json) unless --json is given.",
            show_default=False,
        ),
    ] = None,
    oks_stddev: Annotated[
        str,
        typer.Option(
            metavar="SIGMA[,SIGMA...]",
            help="OKS keypoint spread: one value, or one per node in skeleton order.",
        ),
    ] = "0.025",
    oks_scale: Annotated[
        float | None,
        typer.Option(
            metavar="AREA",
            help="Fixed OKS area in px^2 (default: each ground truth's bounding box).",
            show_default=False,
        ),
    ] = None,
    match_threshold: Annotated[
        float,
        typer.Option(
            metavar="OKS|PX",
            help="A pair matches only when its OKS is above this (centroid mode: when "
            "the centroids are at most this many pixels apart; 0 means 50 px).",
        ),
    ] = 0.0,
    match_method: Annotated[
        MatchMethod,
        typer.Option(
            help="oks: whole poses; centroid: one point per animal, by pixel distance; "
            "bbox: predicted boxes, COCO box AP; auto: bbox when the predictions are "
            "boxes only, centroid when their skeleton has one node, else oks.",
        ),
    ] = DEFAULT_MATCH_METHOD,
    anchor_part: Annotated[
        str | None,
        typer.Option(
            metavar="NODE",
            help="Centroid mode: the ground-truth node that is each instance's centroid "
            "(default: the mean of visible nodes; a name not in the skeleton: the mean).",
            show_default=False,
        ),
    ] = None,
    centroid_method: Annotated[
        CentroidMethod | None,
        typer.Option(
            help="Centroid mode: how ground-truth centroids are derived; give what the "
            "model was trained with (default: anchor with --anchor-part, else "
            "center_of_mass).",
            show_default=False,
        ),
    ] = None,
    centroid_fallback: Annotated[
        CentroidFallback | None,
        typer.Option(
            help="Centroid mode: the centroid where the --anchor-part node is not "
            "visible (default: center_of_mass).",
            show_default=False,
        ),
    ] = None,
    bbox_source: Annotated[
        BboxSource,
        typer.Option(
            help="bbox mode: ground-truth boxes from the file's user boxes, or drawn "
            "around user instances / user masks (auto: boxes, else instances, else masks).",
        ),
    ] = DEFAULT_BBOX_SOURCE,
    bbox_padding: Annotated[
        float,
        typer.Option(
            metavar="PX",
            help="bbox mode: pixels added on each side of boxes drawn around instances "
            "or masks (give the model's training bbox_padding).",
        ),
    ] = 0.0,
    node_map: Annotated[
        str | None,
        typer.Option(
            metavar="PRED=GT[,PRED=GT...]",
            help="Predicted node names and the ground-truth names they stand for, where the "
            "skeletons name them differently (nodes are matched by name, not position).",
            show_default=False,
        ),
    ] = None,
    user_labels_only: Annotated[
        bool,
        typer.Option(
            "--user-labels-only/--all-labels",
            help="Score only user-labeled ground truth (--all-labels: predicted ones too).",
        ),
    ] = True,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Let --json replace an existing file that is not ours."),
    ] = False,
) -> None:
    """Score predictions against ground truth: OKS mAP/mAR, PCK, distances, visibility
    (centroid mode: precision/recall/F1 and distances; bbox mode: COCO box AP/AR)."""
    from sleap_infer.evaluation import evaluate_files, metrics_json
    from sleap_infer.evaluation.nodes import parse_node_map
    from sleap_infer.evaluation.report import npz_paths, write_npz
    from sleap_infer.writers.side_files import check_side_file, write_json

    inputs = (ground_truth, predictions)
    npz_path = None
    if npz is not None:
        npz_path, sibling = npz_paths(npz)
        _check_npz(npz_path, inputs, overwrite)
        if json_path is None:  # sleap-nn writes the .json beside its .npz
            json_path = sibling
    if json_path is not None:
        option = "--json" if npz is None or json_path != npz_paths(npz)[1] else "--npz"
        outputs = () if npz_path is None else (npz_path,)
        check_side_file(
            json_path, option, EVAL_SCHEMA, overwrite=overwrite, inputs=inputs, outputs=outputs
        )

    options = {
        "node_map": parse_node_map(node_map),
        "oks_stddev": parse_stddev(oks_stddev),
        "oks_scale": oks_scale,
        "match_threshold": match_threshold,
        "user_labels_only": user_labels_only,
        "match_method": match_method.value,
        "anchor_part": anchor_part,
        "centroid_method": None if centroid_method is None else centroid_method.value,
        "centroid_fallback": None if centroid_fallback is None else centroid_fallback.value,
        "bbox_source": bbox_source.value,
        "bbox_padding": bbox_padding,
    }
    notes: list[str] = []
    with console.status(f"Scoring {escape(predictions.name)}...", spinner="dots"):
        metrics = evaluate_files(ground_truth, predictions, notes=notes, **options)
    for note in notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    console.print(metrics_table(metrics))
    console.print(counts_line(metrics), highlight=False, soft_wrap=True)
    if "voc_metrics" in metrics and not metrics["counts"]["matched"]:
        console.print(
            "[yellow]note:[/] no prediction matched a ground-truth instance: mAP and "
            "mAR are 0, the other metrics undefined",
            highlight=False,
        )
    if json_path is not None:
        failure = f"--json {json_path}: cannot write the metrics"
        payload = {"schema": EVAL_SCHEMA, **metrics_json(metrics)}
        write_json(
            json_path, payload, failure, indent=None, schema=EVAL_SCHEMA, overwrite=overwrite
        )
        console.print(f"metrics -> {escape(str(json_path))}", highlight=False, soft_wrap=True)
    if npz_path is not None:
        write_npz(npz_path, metrics, f"--npz {npz_path}: cannot write the metrics", overwrite)
        console.print(f"metrics -> {escape(str(npz_path))}", highlight=False, soft_wrap=True)


def _check_npz(path: Path, inputs: tuple[Path, ...], overwrite: bool) -> None:
    """The side-file rule for the ``.npz`` (one line, before scoring): never an input; an
    existing file only when it is a metrics ``.npz`` of ours, or with ``--overwrite``."""
    from sleap_infer.core.errors import OutputError
    from sleap_infer.evaluation.report import is_our_npz
    from sleap_infer.writers.side_files import same_file

    where = f"--npz {path}"
    if path.is_dir():
        raise OutputError(f"{where}: is a folder; give a file name")
    if any(same_file(path, given) for given in inputs):
        raise UsageError(f"{where}: is an input of this run; give another name")
    if path.exists() and not overwrite and not is_our_npz(path):
        raise UsageError(
            f"{where}: exists and is not a metrics .npz written by sleap_infer; pass "
            "--overwrite to replace it, or give another name"
        )
