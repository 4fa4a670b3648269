"""Ctrl-C is exit 130 with one plain line in every command (issue 29).

Typer turned a ``KeyboardInterrupt`` into a silent exit 130, and torch.export wraps
Ctrl-C in its own error, so an interrupted export exited 1 with torch's ANSI colour
codes in the message.
"""

from __future__ import annotations

import pytest
import sleap_io as sio
import torch

from sleap_infer.core.errors import ExportError, plain, raise_if_interrupted
from sleap_infer.export import onnx_export

from cli_runs import run_cli
from conftest import counter_frames, write_video
from model_factory import config_dict, write_model_dir


def _ctrl_c(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.fixture
def model(tmp_path):
    return write_model_dir(tmp_path / "model", config_dict("single_instance"))


def test_every_command_reports_an_interrupt_in_one_plain_line(
    tmp_path, capsys, monkeypatch, model
) -> None:
    from sleap_infer import evaluation
    from sleap_infer.model import loader

    monkeypatch.setattr(loader, "resolve_model_dir", _ctrl_c)
    monkeypatch.setattr(evaluation, "evaluate_files", _ctrl_c)
    video = write_video(tmp_path / "v.mp4", counter_frames(2))
    labels = tmp_path / "l.slp"
    sio.save_slp(sio.Labels(), str(labels))
    for args in (
        ("info", model),
        ("export", model),
        ("bench", model, "--device", "cpu"),
        ("predict", video, "-m", model, "-q"),
        ("eval", labels, labels),
    ):
        code, err = run_cli(capsys, *args)
        assert code == 130, (args, err)
        assert err.strip().splitlines()[-1] == "interrupted", (args, err)
        assert "\x1b" not in err and "Traceback" not in err


def test_ctrl_c_inside_torch_export_is_an_interrupt(tmp_path, monkeypatch) -> None:
    """torch.export raises its own error with the KeyboardInterrupt as its context."""

    def export(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("Failed to export. \x1b[96mThis is step 1/3\x1b[0m") from None

    def failing(*args, **kwargs):
        raise RuntimeError("Failed to export. \x1b[96mThis is step 1/3\x1b[0m")

    class Wrapper(torch.nn.Module):
        model_type = "single_instance"
        output_names = ("peaks",)

    monkeypatch.setattr(onnx_export, "require_onnx", lambda: None)
    monkeypatch.setattr(torch.onnx, "export", export)
    with pytest.raises(KeyboardInterrupt):
        onnx_export.export_onnx(Wrapper(), (1, 1, 8, 8), tmp_path / "m.onnx", 18, False)
    monkeypatch.setattr(torch.onnx, "export", failing)  # a real failure stays one, plain
    with pytest.raises(ExportError) as err:
        onnx_export.export_onnx(Wrapper(), (1, 1, 8, 8), tmp_path / "m.onnx", 18, False)
    assert "\x1b" not in str(err.value) and "This is step 1/3" in str(err.value)


def test_helpers() -> None:
    assert plain("\x1b[96mstep\x1b[0m 1") == "step 1"
    raise_if_interrupted(ValueError("no interrupt in its chain"))
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as inner:
            raise ValueError("wrapped") from inner
    except ValueError as exc:
        with pytest.raises(KeyboardInterrupt):
            raise_if_interrupted(exc)
