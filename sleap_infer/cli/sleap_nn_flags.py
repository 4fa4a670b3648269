"""sleap-nn 0.3.5's command lines, run unchanged: its flag spellings rewritten to ours.

A lab moving from ``sleap-nn predict/track/export/eval`` brings scripts full of
``--batch_size``, ``-i/--data_path``, ``--runtime tensorrt`` and
``--tracking_window_size``. Declaring each of those as a second name of our
options would double every help page, so the translation happens once, on the
argument list, before click parses it: :func:`translate` rewrites each
sleap-nn flag (and, where the words differ, its value) into our spelling, and
refuses by name, with a reason, what infer does not do yet (the MOT trackers of issue #31).
Our help keeps our names; ``docs/from_sleap_nn.md`` lists the whole table.

``sleap-nn track -m MODEL ...`` predicts and tracks: ``infer track -m`` runs
``infer predict --tracking``. Without ``-m`` both re-track an existing file.

Only tokens that name a flag are rewritten, never values (a file called
``--frames`` after ``-o`` stays a file), and nothing after ``--``.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sleap_infer.core.errors import UsageError
from sleap_infer.tracking import registry as tracker_registry

ALIAS = "alias"  # our option under another name; the value (if any) passes unchanged
VALUE = "value"  # the value decides our tokens (or a refusal)
IGNORED = "ignored"  # accepted, changes nothing in infer's output; one note says why
POSITIONAL = "positional"  # the value is one of our command's arguments
REFUSED = "refused"  # not in infer: one line names the flag and says why


@dataclass(frozen=True)
class Flag:
    """What one sleap-nn flag becomes on our command line."""

    kind: str
    to: str = ""  # ALIAS: our option; VALUE: shown in the docs table
    values: Mapping[str, tuple[str, ...] | str] = field(default_factory=dict)  # str: refusal
    takes_value: bool = False  # IGNORED: swallow the next token (a refusal stops there)
    reason: str = ""  # IGNORED: the note; REFUSED: why
    many: bool = False  # VALUE, POSITIONAL: every occurrence counts (else the last one wins)
    clears: str = ""  # IGNORED: our switch this turns back off (an earlier one is dropped)

    def describe(self) -> str:
        """The docs table's 'ours' column."""
        if self.kind == ALIAS:
            return f"`{self.to}`"
        if self.kind == POSITIONAL:
            return f"argument {self.to}"
        if self.kind == VALUE:
            parts = []
            for value, tokens in self.values.items():
                if isinstance(tokens, str):
                    parts.append(f"{value}: refused ({tokens})")
                else:
                    parts.append(
                        f"{value} -> `{' '.join(tokens)}`" if tokens else f"{value}: default"
                    )
            return "; ".join(parts)
        return self.reason


def alias(to: str) -> Flag:
    return Flag(ALIAS, to=to)


def by_value(to: str, values: Mapping[str, tuple[str, ...] | str], many: bool = False) -> Flag:
    return Flag(VALUE, to=to, values=values, many=many)


def ignored(reason: str, takes_value: bool = True, clears: str = "") -> Flag:
    return Flag(IGNORED, takes_value=takes_value, reason=reason, clears=clears)


def positional(name: str, many: bool = False) -> Flag:
    return Flag(POSITIONAL, to=name, takes_value=True, many=many)


def refused(reason: str) -> Flag:
    return Flag(REFUSED, reason=reason)


def _dashed(names: Sequence[str]) -> dict[str, Flag]:
    """``--batch_size`` -> ``--batch-size``: flags that differ from ours only by ``_``."""
    return {n: alias(n.replace("_", "-")) for n in names}


LATER = "not implemented yet in infer (issue #31)"

# --------------------------------------------------------------- inputs and outputs
PREDICT_IO: dict[str, Flag] = {
    # Repeatable in infer: every one is predicted (sleap-nn's one input keeps the last).
    "-i": positional("VIDEOS", many=True),
    "--data_path": positional("VIDEOS", many=True),
    "--model_paths": alias("--model"),
    "--output_path": alias("--output"),
    "--output_format": by_value(
        "--format",
        # Repeatable, as sleap-nn's: each one more --format, all from one prediction pass.
        {"slp": ("--format", "slp"), "analysis_h5": ("--format", "analysis-h5")},
        many=True,
    ),
    # http(s):// inputs are read over HTTP range requests (sources/remote.py).
    "--stream_mode": alias("--stream-mode"),
    # --embed false|true|auto is ours, spelt and meant as sleap-nn's.
    "--restore_source_videos": alias("--restore-source-videos"),
    "--no-restore_source_videos": ignored(
        "a .pkg.slp input is referenced unless --restore-source-videos is given (the last "
        "one counts)",
        takes_value=False,
        clears="--restore-source-videos",
    ),
    "--save_embeddings": alias("--save-embeddings"),
    "--stream-to-file": alias("--output"),
    "--write-interval": ignored(
        "infer writes every batch to a journal as it goes; --write-interval has no effect"
    ),
    "--gui": alias("--progress json"),  # JSON lines on stdout, as sleap-nn's GUI reads
}

# ------------------------------------------------------- what only a model run uses
_MERGE_OFF = "fragment merging is off unless --merge-fragments is given (the last one counts)"
_FULL_RES_OFF = (
    "full-resolution masks are off unless --full-res-masks is given (the last one counts)"
)
PREDICT_ONLY: dict[str, Flag] = {
    # Spelt as ours in predict; listed so that infer track without -m can refuse them.
    "--device": alias("--device"),
    "-d": alias("-d"),
    "-b": alias("-b"),
    "-n": alias("-n"),
    "--frames": alias("--frames"),
    "--runtime": by_value(
        "--backend",
        {"auto": (), "onnx": ("--backend", "onnx"), "tensorrt": ("--backend", "trt")},
    ),
    "--centroid_only": alias("--centroid-only"),
    "--centroid-only": alias("--centroid-only"),
    "--centroid_output": alias("--centroid-output"),  # --centroid-output is ours
    "--ensure_rgb": alias("--ensure-rgb"),
    "--no-ensure_rgb": alias("--no-ensure-rgb"),
    "--ensure_grayscale": alias("--ensure-grayscale"),
    "--no-ensure_grayscale": alias("--no-ensure-grayscale"),
    "--video_dataset": alias("--video-dataset"),
    "--video_input_format": by_value(
        "--video-input-format",
        {
            "channels_last": (),
            "channels_first": ("--video-input-format", "channels_first"),
        },
    ),
    "--integral_refinement": by_value("--no-refine", {"integral": (), "none": ("--no-refine",)}),
    "--peak-conf-threshold": alias("--peak-threshold"),
    "--mask_cleanup": alias("--mask-cleanup"),
    "--no-mask_cleanup": alias("--no-mask-cleanup"),
    "--merge_fragments": alias("--merge-fragments"),
    "--no-merge_fragments": ignored(_MERGE_OFF, False, clears="--merge-fragments"),
    "--no-merge-fragments": ignored(_MERGE_OFF, False, clears="--merge-fragments"),
    "--full_res_masks": alias("--full-res-masks"),
    "--no-full_res_masks": ignored(_FULL_RES_OFF, False, clears="--full-res-masks"),
    "--no-full-res-masks": ignored(_FULL_RES_OFF, False, clears="--full-res-masks"),
    "--queue_maxsize": ignored("infer's frame queue sizes itself; --queue_maxsize has no effect"),
    "--paf-workers": ignored(
        "infer groups bottom-up PAFs in the predicting process; for parallel work use "
        "--devices (one worker per device)"
    ),
    "--cpu-workers": ignored(
        "infer groups bottom-up PAFs in the predicting process; for parallel work use "
        "--devices (one worker per device)"
    ),
    **_dashed(
        (
            "--batch_size",
            "--max_instances",
            "--max_height",
            "--max_width",
            "--input_scale",
            "--anchor_part",
            "--only_labeled_frames",
            "--only_suggested_frames",
            "--exclude_user_labeled",
            "--only_predicted_frames",
            "--no_empty_frames",
            "--video_index",
            "--integral_patch_size",
            "--max_edge_length_ratio",
            "--dist_penalty_weight",
            "--n_points",
            "--min_instance_peaks",
            "--min_line_scores",
            "--bbox_nms_iou",
            "--fg_threshold",
            "--min_mask_area",
            "--backbone_ckpt_path",
            "--head_ckpt_path",
            "--center_nms_kernel",
            "--mask_cleanup_radius",
            "--distance_gate_alpha",
            "--merge_method",
            "--merge_thresholds",
            "--merge_w_valley",
            "--merge_w_offset",
            "--merge_dilate",
            "--mask_output",
            "--polygon_epsilon",
            "--crop_size",
            "--peak_threshold",
            "--centroid_peak_threshold",
            "--filter_overlapping",
            "--filter_overlapping_method",
            "--filter_overlapping_threshold",
            "--filter_min_visible_nodes",
            "--filter_min_visible_node_fraction",
            "--filter_min_mean_node_score",
            "--filter_min_instance_score",
            "--filter_min_centroid_distance",
        )
    ),
}
# SAM masks for the poses of a .slp (sleap_infer/cli/sam.py): the dashed spellings are ours.
PREDICT_ONLY.update(
    _dashed(
        (
            "--mask_backend",
            "--sam_checkpoint",
            "--sam_model_type",
            "--sam_prompt_mode",
            "--sam_anchor_ind",
            "--sam_disjointify_masks",
            "--sam3_model_id",
            "--overlay_path",
        )
    )
)

# ------------------------------------------------------------------------ tracking
# sleap-nn's values and infer's own (infer_bytetrack), from the one tracker registry.
_TRACKER_VALUES: dict[str, tuple[str, ...] | str] = {
    name: ("--tracker", name) for name in tracker_registry.NAMES
}
TRACKING: dict[str, Flag] = {
    "--tracker": by_value("--tracker", _TRACKER_VALUES),
    "--tracking_window_size": alias("--window-size"),
    "--candidates_method": alias("--candidates"),
    "--scoring_method": alias("--scoring"),
    "--scoring_reduction": alias("--reduction"),
    "--robust_best_instance": alias("--robust-quantile"),
    "--track_matching_method": alias("--matching"),
    "--use_flow": alias("--use-flow"),
    **_dashed(
        (
            "--min_new_track_points",
            "--min_match_points",
            "--max_tracks",
            "--oks_stddev",
            "--of_img_scale",
            "--of_window_size",
            "--of_max_levels",
            "--track_buffer",
            "--track_high_threshold",
            "--track_low_threshold",
            "--new_track_threshold",
            "--tracking_target_instance_count",
            "--tracking_pre_cull_to_target",
            "--tracking_pre_cull_iou_threshold",
            "--tracking_clean_instance_count",
            "--tracking_clean_iou_threshold",
            "--post_connect_single_breaks",
            "--min_hits",
            "--min_match_similarity",
            "--mot_param",
            "--appearance_weight",
            "--euclidean_scale",
            "--appearance_threshold",
        )
    ),
    "--use_kalman": alias("--use-kalman"),
    "--link_tracklets": alias("--link-tracklets"),
    **_dashed(
        (
            "--kf_track_features",
            "--kf_init_frame_count",
            "--kf_node_indices",
            "--kf_reset_gap_size",
        )
    ),
}

NEEDS_MODEL = (
    "only with -m: without a model, infer track re-tracks the file's poses and runs no "
    "model (with -m, infer track runs infer predict --tracking)"
)
PREDICT: dict[str, Flag] = {**PREDICT_IO, **PREDICT_ONLY, **TRACKING}
# ``infer track`` without -m: re-track a prediction file (sleap-nn's retrack-only mode).
RETRACK: dict[str, Flag] = {
    **{
        name: flag if flag.kind == IGNORED else refused(NEEDS_MODEL)
        for name, flag in PREDICT_ONLY.items()
    },
    "-i": positional("PREDICTIONS"),
    "--data_path": positional("PREDICTIONS"),
    "--output_path": alias("--output"),
    "--gui": alias("--progress json"),  # JSON lines on stdout, as sleap-nn's GUI reads
    "-t": ignored("infer track always tracks", takes_value=False),
    "--tracking": ignored("infer track always tracks", takes_value=False),
    **TRACKING,
}

# -------------------------------------------------------------------------- export
EXPORT: dict[str, Flag] = {
    "--opset-version": alias("--opset"),
    "--max-peaks-per-node": alias("--max-peaks"),
    "--n-line-points": alias("--n-points"),
    "--workspace-size-gb": alias("--workspace-gb"),
    "--input-height": alias("--input-height"),
    "--input-width": alias("--input-width"),
    "--precision": alias("--precision"),
    "--max-instances": ignored(
        "infer's graphs return every candidate; the instance cap is applied when predicting "
        "(infer predict -n/--max-instances)"
    ),
    "--verify": ignored("infer export always checks the graph against torch", False),
    "--no-verify": ignored("infer export always checks the graph against torch", False),
}

# ---------------------------------------------------------------------------- eval
_EVAL_MASKS = "infer eval does not score masks (its modes: oks, centroid, bbox)"
EVAL: dict[str, Flag] = {
    "-g": positional("GROUND_TRUTH"),
    "--ground_truth_path": positional("GROUND_TRUTH"),
    "-p": positional("PREDICTIONS"),
    "--predicted_path": positional("PREDICTIONS"),
    "-s": alias("--npz"),
    "--save_metrics": alias("--npz"),
    "--oks_stddev": alias("--oks-stddev"),
    "--oks_scale": alias("--oks-scale"),
    "--match_threshold": alias("--match-threshold"),
    "--user_labels_only": alias("--user-labels-only"),
    "--no-user_labels_only": alias("--all-labels"),
    "--match_method": by_value(
        "--match-method",
        {
            "auto": ("--match-method", "auto"),
            "oks": ("--match-method", "oks"),
            "centroid": ("--match-method", "centroid"),
            "bbox": ("--match-method", "bbox"),
            "mask": _EVAL_MASKS,
            "semantic": _EVAL_MASKS,
        },
    ),
    "--bbox_source": alias("--bbox-source"),
    "--bbox_padding": alias("--bbox-padding"),
    "--anchor_part": alias("--anchor-part"),
    "--centroid_method": alias("--centroid-method"),
    "--centroid_fallback": alias("--centroid-fallback"),
}

TABLES: dict[str, dict[str, Flag]] = {
    "predict": PREDICT,
    "track": RETRACK,
    "export": EXPORT,
    "eval": EVAL,
}
# Where a positional flag's value goes: ``eval``'s first argument first, the others last
# (``infer eval gt.slp -p pred.slp`` and ``-g gt.slp pred.slp`` both keep the order).
FIRST_ARGUMENTS = ("GROUND_TRUTH",)
MODEL_FLAGS = ("-m", "--model", "--model_paths")
TRACKING_FLAGS = ("-t", "--tracking")
# Our switches a sleap-nn flag can turn back (``--integral_refinement integral`` after
# ``--no-refine``, ``--no-merge_fragments`` after ``--merge-fragments``).
# (A by-value flag whose every value is the switch or nothing is one, too.)
SWITCHES = frozenset(
    {f.clears for t in TABLES.values() for f in t.values() if f.clears}
    | {
        f.to
        for t in TABLES.values()
        for f in t.values()
        if f.kind == VALUE and all(v in ((), (f.to,)) for v in f.values.values())
    }
)
RETRACK_NOTE = (
    "--tracking without -m: re-tracking the predictions in the input file, no model "
    "(as infer track does)"
)


def _names(token: str) -> tuple[str, str | None]:
    """``--flag=value`` -> (``--flag``, ``value``); other tokens -> (token, None)."""
    if token.startswith("--") and "=" in token:
        name, value = token.split("=", 1)
        return name, value
    return token, None


def translate(
    args: Sequence[str],
    notes: list[str] | None = None,
    value_options: Callable[[str], Collection[str]] | None = None,
) -> list[str]:
    """``args`` (command first) with sleap-nn's flags in our spelling.

    A refused flag raises :class:`UsageError` (exit code 2) naming it; an ignored
    one adds a line to ``notes``. Commands without a table pass unchanged.
    ``value_options(command)``: our options of ``command`` that take a value (the
    token after one is a value, never rewritten).

    A flag given twice keeps its last value, as click (and so sleap-nn) does: our
    options get that from click itself, but a flag whose value becomes other tokens
    (``--integral_refinement none`` -> ``--no-refine``, ``integral`` -> nothing) or
    none at all would otherwise keep whatever an earlier one added. So each such flag
    is turned into tokens once, from its last value (a refused value given before a
    good one is no error, as in click), and a switch turned back off
    (``--no-merge_fragments``) takes out the earlier ``--merge-fragments``.
    """
    args = list(args)
    if not args or args[0] not in TABLES:
        return args
    command = args[0]
    head = args[1 : args.index("--")] if "--" in args else args[1:]
    tail = args[len(head) + 2 :]
    command, head = _what_runs(command, head, notes)
    names = {_names(t)[0] for t in head}
    table = TABLES[command]

    def takes_value(option: str) -> bool:  # asked only where it matters: building it costs
        return value_options is not None and option in value_options(command)

    line = _Line()
    arguments: dict[str, list[str]] = {}
    i = 0
    while i < len(head):
        token = head[i]
        name, inline = _names(token)
        flag = table.get(name)
        i += 1
        before = head[i - 2] if i >= 2 else ""
        # The value of our option (``-o --batch_size``) is left as it is.
        is_value = (
            (flag is not None or name in SWITCHES)
            and before.startswith("-")
            and before not in table
            and takes_value(before)
        )
        if flag is None or is_value:
            # One of our switches that a sleap-nn flag can turn back: in its group.
            line.add([token], group=name if name in SWITCHES and not is_value else None)
            continue
        if flag.kind == REFUSED:
            raise UsageError(f"{name}: {flag.reason}")
        needs_value = flag.kind in (VALUE, POSITIONAL) or flag.takes_value
        value = inline
        if needs_value and value is None:
            if i >= len(head):
                raise UsageError(f"{name}: needs a value")
            value = head[i]
            i += 1
        if flag.kind == ALIAS:
            line.add([*flag.to.split(), *([inline] if inline is not None else [])], flag.to)
        elif flag.kind == POSITIONAL:
            given = arguments.setdefault(flag.to, [])
            if not flag.many:
                given.clear()  # sleap-nn's -g/-p/-i take one file: the last one
            given.append(str(value))
        elif flag.kind == IGNORED:
            if flag.clears:
                line.clear(flag.clears)
            if notes is not None:
                notes.append(f"{name}: {flag.reason}")
        elif flag.many:
            line.add(list(_by_value(name, flag, str(value))))
        else:
            line.last(flag.to, functools.partial(_by_value, name, flag, str(value)))
    first = [v for key, values in arguments.items() if key in FIRST_ARGUMENTS for v in values]
    last = [v for key, values in arguments.items() if key not in FIRST_ARGUMENTS for v in values]
    out = _analysis_only_name(line.tokens(), names)
    return [command, *first, *out, *last, *(["--", *tail] if "--" in args else [])]


def _analysis_only_name(out: list[str], names: Collection[str]) -> list[str]:
    """sleap-nn's ``-o`` always names the ``.slp``, and its analysis HDF5 is named from
    it (``bu.slp`` or ``bu.predictions.slp`` -> ``bu.analysis.h5``), also when
    ``--output_format analysis_h5`` alone writes no ``.slp``. Ours names the file
    written, so that ``-o`` becomes the analysis file's name."""
    formats = [value for flag, value in itertools.pairwise(out) if flag == "--format"]
    if "--output_format" not in names or "slp" in formats:
        return out
    for i, (flag, value) in enumerate(itertools.pairwise(out)):
        if flag in ("-o", "--output") and value.endswith(".slp"):
            stem = value.removesuffix(".slp").removesuffix(".predictions")
            out[i + 1] = f"{stem}.analysis.h5"
    return out


def _what_runs(command: str, head: list[str], notes: list[str] | None) -> tuple[str, list[str]]:
    """sleap-nn's ``track`` with a model predicts, then tracks: our ``predict --tracking``;
    its ``predict -t`` without a model re-tracks the input's predictions: our ``track``."""
    names = {_names(t)[0] for t in head}
    if command == "track" and names & set(MODEL_FLAGS):
        return "predict", ["--tracking", *head]
    masks = names & {"--mask_backend", "--mask-backend"}  # refuses --tracking itself
    if (
        command == "predict"
        and not (names & set(MODEL_FLAGS) or masks)
        and names & set(TRACKING_FLAGS)
    ):
        if notes is not None:
            notes.append(RETRACK_NOTE)
        return "track", [t for t in head if t not in TRACKING_FLAGS]
    return command, head


class _Line:
    """The translated options, in order, as pieces that a later flag can take back.

    A piece may belong to a group (our switch, or the option a sleap-nn flag decides):
    :meth:`clear` empties the group's pieces, :meth:`last` puts a flag's tokens where it
    was last given, made from that last value only when the line is read.
    """

    def __init__(self) -> None:
        self.pieces: list[list[str]] = []
        self.groups: dict[str, list[int]] = {}
        self.pending: dict[int, Callable[[], tuple[str, ...]]] = {}

    def add(self, tokens: list[str], group: str | None = None) -> None:
        if group is not None:
            self.groups.setdefault(group, []).append(len(self.pieces))
        self.pieces.append(tokens)

    def clear(self, group: str) -> None:
        for index in self.groups.pop(group, []):
            self.pieces[index] = []
            self.pending.pop(index, None)

    def last(self, group: str, make: Callable[[], tuple[str, ...]]) -> None:
        self.clear(group)
        self.pending[len(self.pieces)] = make
        self.add([], group)

    def tokens(self) -> list[str]:
        for index, make in self.pending.items():
            self.pieces[index] = list(make())
        return [token for piece in self.pieces for token in piece]


def _by_value(name: str, flag: Flag, value: str) -> tuple[str, ...]:
    key = value.strip().lower()
    tokens = flag.values.get(key)
    if tokens is None:
        taken = [v for v, t in flag.values.items() if not isinstance(t, str)]
        raise UsageError(f"{name} {value!r}: choose one of {', '.join(taken)}")
    if isinstance(tokens, str):
        raise UsageError(f"{name} {value}: {tokens}")
    return tokens


# ------------------------------------------------------------ switches take no value
_SWITCH_WORDS = {"true": True, "yes": True, "on": True, "1": True}
_SWITCH_WORDS |= {"false": False, "no": False, "off": False, "0": False}


def check_switch_values(
    args: Sequence[str], switches: Callable[[str], Mapping[str, str]] | None = None
) -> None:
    """``--tracking false``: a switch takes no value, so ``false`` would become an input
    (click makes it a video, which then is not found) and tracking would be on. sleap-nn's
    switches are click flags too (its predict fails on the extra argument), so this is
    refused, saying how to say it (exit 2). A word that is an existing file is left alone:
    it really is an argument.

    ``switches(command)``: our switches of ``command``, each with its off spelling
    (``--no-mask-cleanup``; empty where leaving it out is off). sleap-nn's spellings of
    switches (``--use_kalman``, ``-t`` on ``track``) are checked as ours.
    """
    if not args:
        return
    ours: dict[str, str] = {}
    options = args[: args.index("--")] if "--" in args else list(args)
    for flag_name, word in itertools.pairwise(options[1:]):
        on = _SWITCH_WORDS.get(word.strip().lower())
        if on is None or not flag_name.startswith("-") or Path(word).exists():
            continue
        if not ours:  # built only for a line that may need it (it costs ~80 ms)
            ours = _switches(args[0], switches)
        if flag_name not in ours:
            continue
        if on:
            fix = f"drop {word!r}"
        elif ours[flag_name]:
            fix = f"use {ours[flag_name]}"
        else:
            fix = f"leave {flag_name} out to turn it off"
        raise UsageError(f"{flag_name} {word}: {flag_name} takes no value; {fix}")


def _switches(command: str, switches: Callable[[str], Mapping[str, str]] | None) -> dict[str, str]:
    """Our switches of ``command`` and sleap-nn's spellings of them, each with its opposite."""
    ours = dict(switches(command)) if switches is not None else {}
    for name, flag in TABLES.get(command, {}).items():
        if flag.kind == ALIAS and flag.to in ours:
            ours.setdefault(name, ours[flag.to])
        elif flag.kind == IGNORED and not flag.takes_value:
            ours.setdefault(name, "")
    return ours


# --------------------------------------------------------------- lists take commas
_LIST_ITEMS: dict[str, dict[str, str]] = {
    "bench": {"--batch-sizes": r"\d+", "--backend": r"[a-z0-9_-]+"},
    "predict": {"--devices": r"(?:cpu|mps|cuda(?::\d+)?)"},
}


def check_lists(args: Sequence[str]) -> None:
    """``--batch-sizes 1 4``: the ``4`` would become a model path and fail as one (exit 1);
    say instead that lists take commas (exit 2). A token that exists as a path is left
    alone: it really is an argument."""
    if not args or args[0] not in _LIST_ITEMS:
        return
    items = _LIST_ITEMS[args[0]]
    for flag, value, following in zip(args, args[1:], args[2:], strict=False):
        pattern = items.get(flag)
        if pattern is None or following.startswith("-") or Path(following).exists():
            continue
        if re.fullmatch(pattern, following, flags=re.IGNORECASE) and (
            flag != "--backend" or following.lower() in _bench_backends()
        ):
            raise UsageError(
                f"{flag} {value} {following}: a list takes commas ({flag} {value},{following})"
            )


def _bench_backends() -> set[str]:
    from sleap_infer.runtimes.runtime import RUNTIMES

    return {*RUNTIMES, "all"}
