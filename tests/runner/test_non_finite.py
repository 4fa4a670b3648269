"""NaN or Inf weights are refused at load; NaN or Inf network outputs are bad frames.

Issue 29 (5): a checkpoint with NaN weights gave single-instance points at (0, 0)
with NaN scores on every frame, and empty frames ("nothing detected") for the other
types, with exit 0.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from sleap_infer.backends.base import check_finite
from sleap_infer.core.errors import ModelError, NonFiniteOutputError
from sleap_infer.layers import PredictOptions, SingleInstanceLayer
from sleap_infer.model.checkpoint import load_state_dict, save_checkpoint
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model
from sleap_infer.runner import Runner
from sleap_infer.runner.runner import NON_FINITE

from cli_runs import error_lines, run_cli
from conftest import counter_frames, write_video
from fakes import FakeBackend
from model_factory import config_dict, write_model_dir


def _poisoned_model(tmp_path, value: float = math.nan, name: str | None = None):
    model = write_model_dir(tmp_path / "model", config_dict("single_instance"))
    state = load_state_dict(model / "best.ckpt")
    key = name or sorted(state)[3]
    state[key] = state[key].clone()
    state[key].view(-1)[0] = value
    save_checkpoint(model / "best.ckpt", state)
    return model, key


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_weights_are_refused_at_load_naming_folder_and_tensor(tmp_path, value) -> None:
    model, key = _poisoned_model(tmp_path, value)
    with pytest.raises(ModelError) as err:
        load_model(model)
    message = str(err.value)
    assert str(model) in message and repr(key) in message and "NaN or Inf" in message


def test_info_and_predict_say_so_in_one_line(tmp_path, capsys) -> None:
    model, key = _poisoned_model(tmp_path)
    video = write_video(tmp_path / "v.mp4", counter_frames(4))
    for args in (("info", model), ("predict", video, "-m", model, "-q")):
        code, err = run_cli(capsys, *args)
        assert code == 1, err
        lines = error_lines(err)
        assert len(lines) == 1 and repr(key) in lines[0] and str(model) in lines[0], err
    assert not (tmp_path / "v.predictions.slp").exists()


def test_check_finite_raw_maps_and_decoded_graphs() -> None:
    maps = {"a": torch.zeros(2, 1, 4, 4), "b": torch.zeros(2, 3)}
    assert check_finite(maps) is maps
    for bad in (math.nan, math.inf, -math.inf):
        maps["a"][1, 0, 2, 2] = bad
        with pytest.raises(NonFiniteOutputError, match="'a'"):
            check_finite(maps)
    # Finite values whose sum overflows float32 are finite: the exact check says so.
    huge = {"a": torch.full((2, 3), 3e38)}
    assert check_finite(huge) is huge
    # A graph that decodes in-graph marks empty peak slots with -inf: not an error there.
    # Its geometry may hold NaN by design (PAF line scores of empty slots): not checked.
    decoded = {
        "peak_vals": torch.tensor([[0.5, -math.inf]]),
        "peak_valid": torch.tensor([[True, False]]),
        "line_scores": torch.tensor([[math.nan]]),
    }
    assert check_finite(decoded, decoded=True) is decoded
    for bad in (math.nan, math.inf):
        decoded["peak_vals"][0, 0] = bad
        with pytest.raises(NonFiniteOutputError, match="'peak_vals'"):
            check_finite(decoded, decoded=True)


def _layer(bad_values: set[int]) -> SingleInstanceLayer:
    """A layer whose maps peak at x = the frame's pixel value; NaN for ``bad_values``."""
    cfg = parse_config(config_dict("single_instance"))

    def make(x: torch.Tensor) -> dict[str, torch.Tensor]:
        cms = torch.zeros(x.shape[0], 3, x.shape[2] // 2, x.shape[3] // 2)
        for b in range(x.shape[0]):
            value = int(x[b, 0, 0, 0])
            cms[b, :, 1, value] = 1.0
            if value in bad_values:
                cms[b, 1, 3, 3] = math.nan
        return {"SingleInstanceConfmapsHead": cms}

    return SingleInstanceLayer(cfg, FakeBackend(make), PredictOptions(refine=False))


@pytest.mark.parametrize(("overlap", "stage"), [(False, False), (True, False), (True, True)])
def test_runner_records_non_finite_frames_and_keeps_the_others(overlap: bool, stage: bool) -> None:
    """Overlapped and staged (the CUDA path; a tensor view on the CPU) runs too."""
    frames = [(i * 2, np.full((16, 16, 1), i, np.uint8)) for i in range(8)]
    got, bad = [], []
    runner = Runner(_layer({3, 6}), batch_size=3, overlap=overlap, stage=stage)
    stats = runner.run(frames, sink=got.append, on_bad_frame=bad.append)
    assert [(e.index, e.kind) for e in bad] == [(6, NON_FINITE), (12, NON_FINITE)]
    assert "NaN or Inf" in bad[0].reason
    indices = np.concatenate([p.frame_indices for p in got]).tolist()
    assert indices == [0, 2, 4, 8, 10, 14]  # in order, the bad ones left out
    xs = np.concatenate([p.points[:, 0, 0, 0] for p in got])
    assert xs.tolist() == [0, 2, 4, 8, 10, 14]  # each frame's own prediction
    assert stats.frames == 6


def test_predict_records_non_finite_frames_as_bad_frames(tmp_path, capsys, monkeypatch) -> None:
    """End to end: the summary counts them, the journal-built output leaves them out."""
    import sleap_io as sio

    from sleap_infer.backends import torch_backend

    model = write_model_dir(tmp_path / "model", config_dict("single_instance"))
    video = write_video(tmp_path / "v.mp4", counter_frames(6))
    original = torch_backend.TorchBackend.__call__
    poisoned = {"calls": 0}

    def call(self, x):  # NaN for every frame brighter than frame 3's
        out = original(self, x)
        bright = x.float().mean(dim=(1, 2, 3)) > float(counter_frames(6)[3].mean()) - 1
        for name in out:
            out[name][bright] = math.nan
        poisoned["calls"] += 1
        return out

    monkeypatch.setattr(torch_backend.TorchBackend, "__call__", call)
    summary = tmp_path / "summary.json"
    code, err = run_cli(
        capsys, "predict", video, "-m", model, "-q", "--summary-json", summary, "-b", "2"
    )
    assert code == 0, err
    row = json.loads(summary.read_text())["videos"][0]
    assert row["bad_frames"] == 3, row
    labels = sio.load_slp(row["output"])
    assert sorted(lf.frame_idx for lf in labels) == [0, 1, 2]
    provenance = labels.provenance
    kinds = {e["kind"] for e in provenance["bad_frames"]}
    assert kinds == {NON_FINITE}
    assert sum(e["count"] for e in provenance["bad_frames"]) == 3


def test_top_down_second_stage_non_finite_frames_are_bad_frames(shared) -> None:
    """NaN from the crop network (run while postprocessing) costs the frames whose crops
    gave it, never the whole run; the other frames keep their instances."""
    import sleap_infer
    from sleap_infer.sources.slp import FILE, read_slp

    from conftest import fixture_model

    pipe = sleap_infer.load(
        fixture_model(shared, "centroid"), fixture_model(shared, "centered_instance"),
        device="cpu", batch_size=2,
    )  # fmt: skip
    labels = read_slp(shared / "videos" / "minimal_instance.pkg.slp", FILE)
    frame = labels.video.backend.get_frame(labels[0].frame_idx)
    frames = np.stack([frame, frame[::-1], frame, frame[::-1]])  # 1 and 3: flipped
    clean = pipe.predict(frames)
    assert clean.valid.sum(axis=1).tolist()[0] > 0
    crop_backend = pipe.layer.instance.backend
    real_call = type(crop_backend).__call__
    flipped_crops = set()

    class Poisoned:
        """The crop network, NaN for crops of the flipped frames (their crops' own pixels)."""

        def __getattr__(self, name):
            return getattr(crop_backend, name)

        def __call__(self, x):
            out = real_call(crop_backend, x)
            for i in range(x.shape[0]):
                if hash(x[i].numpy().tobytes()) in flipped_crops:
                    for value in out.values():
                        value[i] = math.nan
            return out

    flipped = pipe.predict(frames[[1]])  # learn the flipped frame's crops
    for x in crop_backend_inputs(pipe, frames[1]):
        flipped_crops.add(hash(x.numpy().tobytes()))
    assert flipped.valid.sum() > 0 and flipped_crops
    pipe.layer.instance.backend = Poisoned()
    with pytest.warns(UserWarning, match=r"frame \d: the network returned NaN or Inf"):
        pred = pipe.predict(frames)
    bad = pred.provenance["bad_frames"]
    assert [(e["frame_idx"], e["kind"]) for e in bad] == [(1, NON_FINITE), (3, NON_FINITE)]
    assert pred.frame_indices.tolist() == [0, 2]  # no prediction for the bad frames
    width = pred.points.shape[1]
    np.testing.assert_allclose(pred.points, clean.points[[0, 2], :width], atol=1e-4)


def crop_backend_inputs(pipe, frame: np.ndarray) -> list[torch.Tensor]:
    """The crop network's inputs for ``frame`` alone (recorded on a wrapped backend)."""
    seen: list[torch.Tensor] = []
    backend = pipe.layer.instance.backend
    real_call = type(backend).__call__

    class Recording:
        def __getattr__(self, name):
            return getattr(backend, name)

        def __call__(self, x):
            seen.extend(x[i].clone() for i in range(x.shape[0]))
            return real_call(backend, x)

    pipe.layer.instance.backend = Recording()
    try:
        pipe.predict(np.stack([frame, np.zeros_like(frame)]))
    finally:
        pipe.layer.instance.backend = backend
    return seen


def test_exported_bottom_up_graph_is_not_a_bad_frame(shared) -> None:
    """Its PAF line scores are NaN by design for empty peak slots: only the values read
    off the maps are checked on a graph that decodes in-graph (every frame was flagged)."""
    pytest.importorskip("onnxruntime")
    import sleap_infer

    from conftest import fixture_model

    pipe = sleap_infer.load(fixture_model(shared, "bottomup"), backend="onnx", device="cpu")
    pred = pipe.predict(shared / "videos" / "centered_pair_small.mp4", frames="0-1")
    assert pred.provenance["bad_frames"] == [] and pred.frame_indices.tolist() == [0, 1]
