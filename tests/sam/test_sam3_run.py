"""``--mask-backend sam3`` run for real: a tiny random ``Sam3TrackerModel`` saved to a
folder offline (nothing downloaded), loaded the way ``--sam3-model-id`` loads it, and
the prompts checked against transformers' own ``Sam3TrackerProcessor`` code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.sam import models
from sleap_infer.sam.recipe import prompt_for
from sleap_infer.sam.run import SamOptions, segment

from cli_runs import run_cli

transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "Sam3TrackerModel"):
    pytest.skip("transformers has no Sam3TrackerModel (needs >= 5)", allow_module_level=True)
torch = pytest.importorskip("torch")

SIZE = 112  # 8 x 8 patches of 14 px: a CPU forward takes milliseconds


def make_tiny_sam3(folder: Path) -> Path:
    """A random SAM3 tracker at the smallest sizes its configs take, with the processor
    files ``Sam3TrackerProcessor.save_pretrained`` writes. The processor itself cannot
    be built here (its image processor needs torchvision), so its two JSON files are
    written as it writes them."""
    torch.manual_seed(0)
    config = transformers.Sam3TrackerConfig(
        vision_config={
            "model_type": "sam3_vision_model",
            "backbone_config": {
                "model_type": "sam3_vit_model",
                "hidden_size": 32,
                "intermediate_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 2,
                "image_size": SIZE,
                "patch_size": 14,
                "window_size": 4,
                "global_attn_indexes": [1],
                "pretrain_image_size": 56,
            },
            "fpn_hidden_size": 32,
            "backbone_feature_sizes": [[32, 32], [16, 16], [8, 8]],
        },
        prompt_encoder_config={
            "hidden_size": 32,
            "image_size": SIZE,
            "patch_size": 14,
            "mask_input_channels": 4,
        },
        mask_decoder_config={
            "hidden_size": 32,
            "mlp_dim": 64,
            "num_attention_heads": 2,
            "iou_head_hidden_dim": 32,
        },
    )
    transformers.Sam3TrackerModel(config).save_pretrained(str(folder))
    image_processor = {
        "image_processor_type": "Sam3ImageProcessor",
        "size": {"height": SIZE, "width": SIZE},
        "mask_size": {"height": 32, "width": 32},
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "rescale_factor": 1 / 255,
        "do_resize": True,
        "do_rescale": True,
        "do_normalize": True,
        "do_convert_rgb": True,
        "resample": 2,
    }
    processor = {
        "processor_class": "Sam3TrackerProcessor",
        "target_size": SIZE,
        "point_pad_value": -10,
        "image_processor": image_processor,
    }
    (folder / "processor_config.json").write_text(json.dumps(processor, indent=2))
    return folder


@pytest.fixture(scope="module")
def sam3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_sam3(tmp_path_factory.mktemp("sam3"))


@pytest.fixture
def pose_slp(shared: Path, tmp_path: Path) -> Path:
    src = tmp_path / "in.pkg.slp"
    shutil.copy(shared / "videos" / "minimal_instance.pkg.slp", src)
    return src


def test_cli_sam3_writes_one_mask_per_instance(
    pose_slp: Path, sam3_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = pose_slp.read_bytes()
    out = tmp_path / "out.slp"
    code, err = run_cli(
        capsys, "predict", pose_slp, "--mask-backend", "sam3", "--sam3-model-id", sam3_dir,
        "-o", out, "--device", "cpu",
    )  # fmt: skip
    assert code == 0, err
    assert pose_slp.read_bytes() == before
    source, labels = sio.load_slp(str(pose_slp)), sio.load_slp(str(out))
    assert len(labels.labeled_frames) == len(source.labeled_frames)
    n_masks = 0
    for lf, src in zip(labels.labeled_frames, source.labeled_frames, strict=True):
        assert len(lf.instances) == len(src.instances)
        # sleap-nn's rule: a mask per instance with a visible keypoint, unless SAM's
        # chosen mask is empty; a random model may give an empty one, never more.
        assert len(lf.masks) <= len(lf.instances)
        for m in lf.masks:
            assert isinstance(m, sio.PredictedSegmentationMask)
            assert m.data.shape == lf.image.shape[:2] and m.data.any()
            assert np.isfinite(m.score)
            assert m.instance is None  # the fixture's instances are user instances
        n_masks += len(lf.masks)
    assert n_masks >= 1


@pytest.mark.parametrize("mode", ["pose", "centroid", "box"])
def test_every_prompt_mode_runs(mode: str, pose_slp: Path, sam3_dir: Path, tmp_path: Path) -> None:
    """``box`` included: sleap-nn 0.3.5 hands transformers empty point lists there
    and its processor refuses them; infer sends the boxes alone."""
    n_frames, n_masks = segment(
        pose_slp,
        tmp_path / f"{mode}.slp",
        SamOptions(backend="sam3", prompt_mode=mode, sam3_model_id=str(sam3_dir)),
        "cpu",
    )
    assert n_frames == 1 and 1 <= n_masks <= 2


def test_processor_settings_read_from_the_folder(sam3_dir: Path) -> None:
    model, processor = models.load_sam3(str(sam3_dir), "cpu")
    assert processor == models.Sam3Processor(size=(SIZE, SIZE), target_size=SIZE)
    assert next(model.parameters()).dtype == torch.bfloat16  # as sleap-nn
    x = processor.pixels(np.full((40, 30, 3), 255, np.uint8))
    assert tuple(x.shape) == (1, 3, SIZE, SIZE)
    assert torch.allclose(x, torch.ones_like(x))  # (255 / 255 - 0.5) / 0.5


def test_prompts_equal_transformers_processor() -> None:
    """The padded, scaled prompt tensors equal those ``Sam3TrackerProcessor`` builds
    (its prompt code needs no image processor: called with ``original_sizes``)."""
    hw = (200, 100)
    ours = models.Sam3Processor(size=(SIZE, SIZE), target_size=SIZE)
    theirs = object.__new__(transformers.Sam3TrackerProcessor)
    theirs.target_size, theirs.point_pad_value = SIZE, -10
    kp_a = np.array([[10, 20], [30, 40], [np.nan, np.nan]], np.float32)
    kp_b = np.array([[50, 60], [np.nan, np.nan], [np.nan, np.nan]], np.float32)
    for mode in ("pose", "centroid"):
        prompts = [p for kp in (kp_a, kp_b) if (p := prompt_for(mode, kp, hw)) is not None]
        assert len(prompts) == 2
        got = ours.prompts(prompts, hw)
        points = [np.asarray(p.points).tolist() for p in prompts]
        kwargs: dict[str, object] = {
            "input_points": [points],
            "input_labels": [[[1] * len(pts) for pts in points]],
        }
        if mode == "pose":
            kwargs["input_boxes"] = [[np.asarray(p.box).reshape(4).tolist() for p in prompts]]
        want = theirs(original_sizes=[list(hw)], return_tensors="pt", **kwargs)
        assert set(got) == set(kwargs)
        for key in got:
            assert got[key].dtype == want[key].dtype, key
            assert torch.equal(got[key], want[key]), key
