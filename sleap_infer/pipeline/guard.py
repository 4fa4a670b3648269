"""Outputs that no run may write, whatever ``overwrite`` says: its input, its models.

``overwrite=True`` means "replace an earlier output of mine", never "replace the
video I am reading" or "replace the checkpoint I am running": both are gone for
good once the atomic rename lands (``predict_to_file("v.mp4", "v.mp4",
overwrite=True)`` left a 27 kB ``.slp`` named ``v.mp4``). The command line plans
its outputs with the same refusal (:func:`sleap_infer.batch.tasks.check_output_arg`
names an input of the run); this module is the rule at the one place every run
passes, :meth:`~sleap_infer.pipeline.pipeline.Pipeline.predict_to_file`, so the
batch, the CLI and a Python caller all meet it before a frame is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sleap_infer.core.errors import SleapInferError, UsageError
from sleap_infer.model.loader import resolve_model_dir
from sleap_infer.writers.outputs import COMPLETE, existing_output
from sleap_infer.writers.registry import OutputFormat
from sleap_infer.writers.side_files import same_file


def model_folders(model_paths: Iterable[str | Path]) -> list[Path]:
    """The folders the models were loaded from (a path that names no model is skipped:
    it could not have been loaded, so nothing of it can be overwritten)."""
    folders = []
    for given in model_paths:
        try:
            folders.append(resolve_model_dir(given).resolve())
        except (SleapInferError, OSError):
            continue
    return folders


def refuse_protected_output(
    outputs: Iterable[tuple[OutputFormat, Path]],
    video: str | Path,
    model_paths: Iterable[str | Path],
) -> None:
    """One :class:`UsageError` line for an output that is the input ``video`` or an existing
    file among the models' files (a checkpoint, a config, an export's engine). A finished
    output of ours kept in a model's folder is no model file: ``overwrite`` decides it."""
    folders = model_folders(model_paths)
    for fmt, out in outputs:
        if same_file(out, Path(video)):
            raise UsageError(
                f"{out}: is the input of this run ({video}); give another output "
                "(overwriting never replaces an input)"
            )
        if not out.exists() or existing_output(out, fmt) == COMPLETE:
            continue
        where = out.resolve()
        for folder in folders:
            if where == folder or where.is_relative_to(folder):
                raise UsageError(
                    f"{out}: is a file of the model {folder}; give another output "
                    "(overwriting never replaces a model's files)"
                )
