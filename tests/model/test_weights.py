"""sleap-nn's --backbone_ckpt_path / --head_ckpt_path: which tensors come from which file."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

import sleap_infer
from sleap_infer.core.errors import ModelError, UsageError
from sleap_infer.core.files import file_sha256
from sleap_infer.core.overrides import ConfigOverrides
from sleap_infer.model.checkpoint import load_state_dict, save_checkpoint
from sleap_infer.pipeline.request import checkpoint_hashes
from sleap_infer.pipeline.spec import bind

from cli_runs import run_cli

BOTTOMUP = "minimal_instance_bottomup"
# Another fixture whose UNet has the bottom-up model's backbone shapes (its head differs).
SAME_BACKBONE = "minimal_instance_centered_instance"


def _merged_model(tmp_path: Path, shared: Path, backbone: Path, head: Path) -> Path:
    """The bottom-up model folder with a best.ckpt built by hand: sleap-nn's keys containing
    ``.backbone`` from ``backbone``, those containing ``.head_layers`` from ``head``."""
    folder = tmp_path / "merged"
    folder.mkdir()
    shutil.copy(shared / "models" / BOTTOMUP / "training_config.yaml", folder)
    theirs, ours = load_state_dict(backbone), load_state_dict(head)
    merged = {k: v for k, v in ours.items() if k.startswith("head_layers.")}
    merged |= {k: v for k, v in theirs.items() if k.startswith("backbone.")}
    assert set(merged) == set(ours)
    save_checkpoint(folder / "best.ckpt", merged)
    return folder


def _frames(shared: Path) -> np.ndarray:
    video = sio.load_video(str(shared / "videos" / "centered_pair_small.mp4"))
    return np.stack([np.asarray(video[i]) for i in range(3)])


def _points(pred: sleap_infer.Prediction) -> np.ndarray:
    return np.where(pred.valid[..., None, None], pred.points, -1.0)


def test_backbone_from_one_file_heads_from_another_equal_a_merged_checkpoint(
    shared: Path, tmp_path: Path
) -> None:
    backbone = shared / "models" / SAME_BACKBONE / "best.ckpt"
    head = shared / "models" / BOTTOMUP / "best.ckpt"
    merged = _merged_model(tmp_path, shared, backbone, head)
    frames = _frames(shared)
    options = {"peak_threshold": 0.05}
    want = sleap_infer.load([merged], **options).predict(frames)
    got = sleap_infer.load(
        [shared / "models" / BOTTOMUP],
        backbone_ckpt_path=str(backbone),
        head_ckpt_path=str(head),
        **options,
    ).predict(frames)
    plain = sleap_infer.load([shared / "models" / BOTTOMUP], **options).predict(frames)
    assert want.valid.any()
    assert np.array_equal(_points(got), _points(want), equal_nan=True)
    assert np.array_equal(got.point_scores, want.point_scores, equal_nan=True)
    # ... and the backbone did change the result (the test could fail)
    assert not np.array_equal(_points(plain), _points(want), equal_nan=True)


def test_backbone_alone_takes_the_whole_file(shared: Path, tmp_path: Path) -> None:
    """sleap-nn's --backbone_ckpt_path alone loads every tensor of the file (heads too):
    here another 'epoch' of the single-instance model, its weights nudged."""
    source = shared / "models" / "minimal_instance_single_instance"
    other = tmp_path / "epoch7.ckpt"
    state = load_state_dict(source / "best.ckpt")
    save_checkpoint(other, {k: v * 1.05 if v.is_floating_point() else v for k, v in state.items()})
    model_dir = tmp_path / "nudged"
    model_dir.mkdir()
    shutil.copy(source / "training_config.yaml", model_dir)
    shutil.copy(other, model_dir / "best.ckpt")
    video = sio.load_video(str(shared / "videos" / "small_robot.mp4"))
    frames = np.stack([np.asarray(video[i]) for i in range(2)])
    want = sleap_infer.load([model_dir]).predict(frames)
    got = sleap_infer.load([source], backbone_ckpt_path=str(other)).predict(frames)
    plain = sleap_infer.load([source]).predict(frames)
    assert np.array_equal(_points(got), _points(want), equal_nan=True)
    assert np.array_equal(got.point_scores, want.point_scores, equal_nan=True)
    assert not np.array_equal(got.point_scores, plain.point_scores, equal_nan=True)


def test_a_file_of_another_architecture_is_refused_in_one_line(shared: Path) -> None:
    centroid = shared / "models" / "minimal_instance_centroid" / "best.ckpt"
    spec = bind([shared / "models" / BOTTOMUP], backbone_ckpt_path=str(centroid))
    with pytest.raises(
        ModelError, match=r"^--backbone-ckpt-path .*centroid.*do not fit .*bottomup"
    ):
        spec.check([])
    # the heads of the centered-instance model do not fit a bottom-up model either
    head = shared / "models" / SAME_BACKBONE / "best.ckpt"
    spec = bind([shared / "models" / BOTTOMUP], head_ckpt_path=str(head))
    with pytest.raises(ModelError, match=r"^--head-ckpt-path .*head_layers weights do not fit"):
        spec.check([])
    spec = bind([shared / "models" / BOTTOMUP], head_ckpt_path="/nonexistent/x.ckpt")
    with pytest.raises(UsageError, match=r"^--head-ckpt-path /nonexistent/x.ckpt: no such file"):
        spec.check([])


def test_the_request_hashes_the_files_used(shared: Path) -> None:
    model = shared / "models" / BOTTOMUP
    backbone = shared / "models" / SAME_BACKBONE / "best.ckpt"
    plain = checkpoint_hashes([str(model)])
    assert plain == [file_sha256(model / "best.ckpt")]
    both = checkpoint_hashes(
        [str(model)],
        ConfigOverrides(backbone_ckpt_path=str(backbone), head_ckpt_path=str(model / "best.ckpt")),
    )
    alone = checkpoint_hashes([str(model)], ConfigOverrides(backbone_ckpt_path=str(backbone)))
    assert len({plain[0], both[0], alone[0]}) == 3
    # the loaded model carries the same hash, so a rerun, the journal and the export
    # cache all see other weights as another model
    pipeline = sleap_infer.load(
        [model], backbone_ckpt_path=str(backbone), head_ckpt_path=str(model / "best.ckpt")
    )
    assert [m.checkpoint_sha256 for m in pipeline.models] == both


def test_cli_takes_sleap_nn_spelling_and_records_the_files(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = shared / "models" / BOTTOMUP
    backbone = shared / "models" / SAME_BACKBONE / "best.ckpt"
    out = tmp_path / "p.slp"
    code, err = run_cli(
        capsys, "predict", shared / "videos" / "centered_pair_small.mp4", "-m", model,
        "--backbone_ckpt_path", backbone, "--head_ckpt_path", model / "best.ckpt",
        "--frames", "0-1", "-o", out, "-q",
    )  # fmt: skip
    assert code == 0, err
    labels = sio.load_slp(str(out))
    text = str(labels.provenance)
    assert str(backbone) in text
