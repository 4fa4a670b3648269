"""SAM1 through segment-anything's networks (a tiny one here; ViT-B parity is
benchmarks/sam_parity.py), SAM3's local-folder rule, and the one line without the extra."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from sleap_infer.core.errors import ModelError, UsageError
from sleap_infer.sam import models
from sleap_infer.sam.recipe import pick, prompt_for

# find_spec, not importorskip: a CUDA torchvision next to a CPU torch makes the import
# itself fail with a RuntimeError, which sam_registry() goes around.
if importlib.util.find_spec("segment_anything") is None:
    pytest.skip("needs segment-anything (the [sam] extra)", allow_module_level=True)


def tiny_sam(seed: int = 0, img_size: int = 64) -> Any:
    """A SAM with segment-anything's own modules, small enough for a unit test."""
    models.sam_registry()  # makes segment_anything.modeling importable without torchvision
    from segment_anything.modeling import (
        ImageEncoderViT,
        MaskDecoder,
        PromptEncoder,
        Sam,
        TwoWayTransformer,
    )

    torch.manual_seed(seed)
    dim, grid = 16, img_size // 16
    sam = Sam(
        image_encoder=ImageEncoderViT(
            img_size=img_size, patch_size=16, embed_dim=16, depth=1, num_heads=2, out_chans=dim
        ),
        prompt_encoder=PromptEncoder(
            embed_dim=dim,
            image_embedding_size=(grid, grid),
            input_image_size=(img_size, img_size),
            mask_in_chans=4,
        ),
        mask_decoder=MaskDecoder(
            num_multimask_outputs=3,
            transformer=TwoWayTransformer(depth=1, embedding_dim=dim, mlp_dim=32, num_heads=2),
            transformer_dim=dim,
            iou_head_depth=1,
            iou_head_hidden_dim=16,
        ),
        pixel_mean=[123.675, 116.28, 103.53],
        pixel_std=[58.395, 57.12, 57.375],
    )
    return sam.eval()


def test_registry_loads_without_torchvision() -> None:
    registry = models.sam_registry()
    assert {"vit_b", "vit_l", "vit_h"} <= set(registry)


def test_predictor_gives_three_frame_sized_candidates_on_a_non_square_frame() -> None:
    predictor = models.SamPredictor(tiny_sam())
    rgb = np.random.default_rng(0).integers(0, 255, (30, 50, 3), dtype=np.uint8)
    predictor.set_image(rgb)
    assert predictor.input == (38, 64)  # longest side to the encoder's 64, rounded
    prompt = prompt_for("pose", np.array([[10, 10], [30, 20]], np.float32), (30, 50))
    assert prompt is not None
    masks, scores = predictor.predict(prompt)
    assert masks.shape == (3, 30, 50) and masks.dtype == bool and scores.shape == (3,)


def test_sam1_keeps_the_picked_candidate_and_its_raw_score() -> None:
    sam1 = models.Sam1(tiny_sam())
    img = np.random.default_rng(1).integers(0, 255, (40, 40), dtype=np.uint8)
    prompts = [
        prompt_for(m, np.array([[10, 10], [20, 25]], np.float32), (40, 40))
        for m in ("pose", "centroid", "box")
    ]
    got, scores = sam1.masks(img, [p for p in prompts if p is not None])
    assert len(got) == 3 and all(m.shape == (40, 40) for m in got)
    # the same frame again, candidate by candidate: the pick is pick()'s
    sam1.predictor.set_image(models.clahe_rgb(img))
    for p, mask, score in zip(prompts, got, scores, strict=True):
        assert p is not None
        cands, cand_scores = sam1.predictor.predict(p)
        b = pick(cands, cand_scores, p.reject_box)
        np.testing.assert_array_equal(mask, cands[b])
        assert score == pytest.approx(float(cand_scores[b]))


def test_checkpoint_problems_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="needs --sam-checkpoint"):
        models.load_sam(None, "vit_b", "cpu")
    with pytest.raises(UsageError, match="no such file"):
        models.load_sam(tmp_path / "none.pth", "vit_b", "cpu")
    with pytest.raises(UsageError, match="expected one of vit_b, vit_l, vit_h"):
        models.load_sam(tmp_path / "none.pth", "vit_x", "cpu")
    bad = tmp_path / "tiny.pth"
    torch.save(tiny_sam().state_dict(), bad)  # weights of another shape
    with pytest.raises(ModelError, match="not a SAM vit_b checkpoint"):
        models.load_sam(bad, "vit_b", "cpu")


def test_without_segment_anything_one_line_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [m for m in sys.modules if m.startswith("segment_anything")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "segment_anything", None)  # import fails
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UsageError, match=r"sleap-infer\[sam\]"):
        models.sam_registry()


def test_sam3_needs_a_local_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a local folder"):
        models.load_sam3("facebook/sam3", "cpu")
    (tmp_path / "empty").mkdir()
    pytest.importorskip("transformers")
    # An empty folder is not a model; where transformers' SAM3 cannot be imported at all
    # (a broken torchvision beside it), the one line says so and why.
    with pytest.raises((ModelError, UsageError)) as info:
        models.load_sam3(str(tmp_path / "empty"), "cpu")
    message = str(info.value)
    assert "not a SAM3 tracker model folder" in message or "here it fails:" in message
    assert len(message.splitlines()) == 1
