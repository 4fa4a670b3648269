"""Help pages that read in full at 80 columns, and the exit codes every command documents.

Typer's rich help panels squeeze long option names into a fixed column and cut
them with an ellipsis at 80 columns; plain help (``rich_markup_mode=None``) wraps
instead. :class:`HelpCommand` fixes what plain help still gets wrong for us:
Typer writes a required argument as ``{videos}...`` and lists it with a Python
type (``<list[str]>``), and textwrap splits ``--peak-threshold`` after ``peak-``;
and it ignores ``rich_help_panel``, so a long option list would be one flat list:
plain help here prints each panel as a section of its own.
"""

from __future__ import annotations

import re
import signal
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from typer.core import TyperCommand

EXIT_OK = 0
EXIT_FAILED = 1  # a video, the model or a benchmark row failed
EXIT_USAGE = 2  # bad usage or options (what SleapInferError.UsageError carries)
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM, as shells report SIGINT

INTERRUPT_HOOKS: dict[str, Callable[[Any], None]] = {}
"""Per command, what to do with its click context when it is interrupted (before the
one ``interrupted`` line): the command module's ``on_interrupt``, when it has one
(registered by :func:`sleap_infer.cli.build_app`)."""

_BRACED = re.compile(r"^\{([^}]*)\}")

# ``infer predict`` has some 120 options: one flat list was 373 lines. Its help groups
# them under these headings, in this order. The table below names each option's panel
# by parameter name, here in one place rather than on every option's definition (which
# several people edit): :class:`HelpCommand` sets it as the option's ``rich_help_panel``
# when the command is built, and a test checks that every visible option has one.
INPUTS = "Inputs and outputs"
RUNTIME = "Model and runtime"
PEAKS = "Peaks and filters"
TRACKING = "Tracking"
SEGMENTATION = "Segmentation"
NWB = "NWB session and subject (--format nwb)"
BATCH = "Batch and cluster"
PREDICT_PANELS = (INPUTS, RUNTIME, PEAKS, TRACKING, SEGMENTATION, NWB, BATCH)


def _panel(panel: str, names: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), panel)


HELP_PANELS: dict[str, dict[str, str]] = {
    "predict": {
        **_panel(
            INPUTS,
            "output output_format frames no_empty_frames csv_empty_frames embed "
            "restore_source_videos save_embeddings recursive headers "
            "stream_mode video_index "
            "only_labeled_frames only_suggested_frames exclude_user_labeled "
            "only_predicted_frames merge_into_project keep_corrupt_frames video_dataset "
            "video_input_format "
            "progress progress_interval quiet",
        ),
        **_panel(
            RUNTIME,
            "model backend device batch_size fp16 bf16 int8 compile max_height "
            "max_width input_scale crop_size anchor_part ensure_rgb ensure_grayscale "
            "backbone_ckpt_path head_ckpt_path",
        ),
        **_panel(
            PEAKS,
            "peak_threshold no_refine integral_patch_size refine_like_sleap_nn max_instances "
            "centroid_peak_threshold centroid_only centroid_output max_edge_length_ratio "
            "dist_penalty_weight n_points min_instance_peaks min_line_scores bbox_nms_iou "
            "filter_overlapping filter_overlapping_method filter_overlapping_threshold "
            "filter_min_visible_nodes filter_min_visible_node_fraction "
            "filter_min_mean_node_score filter_min_instance_score filter_min_centroid_distance",
        ),
        **_panel(
            TRACKING,
            "tracking tracker features scoring reduction robust_quantile candidates "
            "window_size matching max_tracks min_new_track_points min_match_points "
            "oks_stddev use_flow of_img_scale of_window_size of_max_levels track_buffer "
            "track_high_threshold track_low_threshold new_track_threshold min_hits "
            "min_match_similarity mot_param tracking_target_instance_count "
            "tracking_pre_cull_to_target tracking_pre_cull_iou_threshold "
            "tracking_clean_instance_count tracking_clean_iou_threshold "
            "post_connect_single_breaks appearance_weight euclidean_scale "
            "appearance_threshold link_tracklets use_kalman kf_track_features "
            "kf_init_frame_count kf_node_indices kf_reset_gap_size",
        ),
        **_panel(
            SEGMENTATION,
            "fg_threshold center_nms_kernel min_mask_area mask_cleanup mask_cleanup_radius "
            "distance_gate_alpha merge_fragments merge_method merge_thresholds "
            "merge_w_valley merge_w_offset merge_dilate full_res_masks mask_output "
            "polygon_epsilon mask_backend sam_checkpoint sam_model_type sam_prompt_mode "
            "sam_anchor_ind sam_disjointify_masks sam3_model_id overlay_path",
        ),
        **_panel(
            NWB,
            "nwb_subject nwb_species nwb_sex nwb_age nwb_session_start_time "
            "nwb_experimenter nwb_institution nwb_lab nwb_session_description nwb_metadata",
        ),
        **_panel(BATCH, "devices shard resume overwrite summary_json qc_report"),
    },
}


def exit_codes(ok: str, failed: str, interrupted: str = "interrupted (Ctrl-C or SIGTERM)") -> str:
    r"""The epilog block each command ends its help with (``\b``: kept as written)."""
    return (
        "\b\nExit codes:\n"
        f"  0    {ok}\n"
        f"  1    {failed}\n"
        "  2    bad usage or options\n"
        f"  130  {interrupted}"
    )


_TERM_PENDING: list[bool] = [False]  # a SIGTERM came while the command line was read


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _note_term(signum: int, frame: object) -> None:
    _TERM_PENDING[0] = True


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (``kill``, a SLURM time limit or preemption) stops every command as Ctrl-C
    does: the one ``interrupted`` line, exit 130, temporary files removed by the code that
    made them (render's ``.tmp.mp4``), and predict's ``--summary-json`` written. Python's
    default is to die at once (exit 143) with none of that.

    While the command line is read (imports, parsing: a second or more on a busy
    machine) a SIGTERM is only noted; :func:`arm_sigterm` raises it as the command
    starts, with its options parsed, so predict still knows where its summary goes. The
    previous handler comes back afterwards, so a caller in the same process (tests)
    keeps its own; only the main thread can set one.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _TERM_PENDING[0] = False
    previous = signal.signal(signal.SIGTERM, _note_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _TERM_PENDING[0] = False


def arm_sigterm() -> None:
    """From here SIGTERM raises ``KeyboardInterrupt``; one noted while starting raises now.
    Only under :func:`sigterm_as_interrupt` (a command called otherwise keeps its caller's)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not _note_term:
        return
    signal.signal(signal.SIGTERM, _raise_interrupt)
    if _TERM_PENDING[0]:
        _TERM_PENDING[0] = False
        raise KeyboardInterrupt


@contextmanager
def whole_hyphenated_words() -> Iterator[None]:
    """Wrap help text at spaces only, so option names in it stay copyable."""
    wrapper = textwrap.TextWrapper
    saved = wrapper.wordsep_re
    wrapper.wordsep_re = wrapper.wordsep_simple_re  # type: ignore[misc]
    try:
        yield
    finally:
        wrapper.wordsep_re = saved  # type: ignore[misc]


class HelpCommand(TyperCommand):
    """A command whose plain help shows ``VIDEOS...`` and arguments without Python types,
    and its options under the headings of :data:`HELP_PANELS` (in plain help too)."""

    def __init__(self, name: str | None, *args: Any, **kwargs: Any) -> None:
        super().__init__(name, *args, **kwargs)
        panels = HELP_PANELS.get(name or "", {})
        for param in self.params:
            if param.name in panels:
                param.rich_help_panel = panels[param.name]  # type: ignore[attr-defined]

    def invoke(self, ctx: Any) -> Any:
        """Run the command; Ctrl-C becomes :class:`~sleap_infer.core.errors.Interrupted`.

        Typer turns a ``KeyboardInterrupt`` into a silent exit code 130, so the command
        line's one-line report never ran; an error of ours passes through to it instead.
        SIGTERM arrives here as the same ``KeyboardInterrupt`` (see
        :func:`sigterm_as_interrupt`); a command's :data:`INTERRUPT_HOOKS` entry runs
        first (predict writes its ``--summary-json``).
        """
        from sleap_infer.core.errors import Interrupted

        try:
            arm_sigterm()
            return super().invoke(ctx)
        except KeyboardInterrupt:
            hook = INTERRUPT_HOOKS.get(self.name or "")
            if hook is not None:
                hook(ctx)
            raise Interrupted("interrupted") from None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse, then refuse NaN, Inf and out-of-range numbers before the command runs
        (exit 2): a threshold of ``nan`` must not fail only after predicting."""
        from sleap_infer.core.options import check_number

        rest = super().parse_args(ctx, args)
        for param in self.get_params(ctx):
            value = ctx.params.get(param.name)
            flag = max(getattr(param, "opts", None) or [param.name], key=len)
            for item in value if isinstance(value, (list, tuple)) else [value]:
                check_number(param.name, item, flag)
        return rest

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [_BRACED.sub(r"\1", piece) for piece in super().collect_usage_pieces(ctx)]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        with whole_hyphenated_words():
            super().format_help(ctx, formatter)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """Arguments, the options without a panel, then each panel's options: plain help's
        wrapping (whole at 80 columns) with the grouping of Typer's rich panels."""
        order = ("Arguments", "Options", *PREDICT_PANELS)
        sections: dict[str, list[tuple[str, str]]] = {title: [] for title in order}
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                sections["Arguments"].append((_argument_name(param), param.help or ""))
            elif (record := param.get_help_record(ctx)) is not None:
                panel = getattr(param, "rich_help_panel", None) or "Options"
                sections.setdefault(panel, []).append(record)
        for title, rows in sections.items():
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _argument_name(param: Any) -> str:
    name = param.metavar or param.name.upper()
    return name if param.nargs == 1 or name.endswith("...") else f"{name}..."
