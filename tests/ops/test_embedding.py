"""Embedding (re-ID) models: heads, crops, standardisation, strict loading, parity.

Parity against sleap-nn 0.3.5's reference ``.slp`` files skips when the shared
fixtures are absent; everything else runs on random-weight models.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.core.errors import ModelError, UsageError
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.options import PredictOptions
from sleap_infer.layers.build import build_layer
from sleap_infer.layers.embedding import EmbeddingLayer, TopDownEmbeddingLayer
from sleap_infer.model import registry
from sleap_infer.model.checkpoint import load_checkpoint
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.nets.heads import GeM, L2Norm
from sleap_infer.ops.embedding_crops import (
    mask_center,
    mask_pixels,
    pose_centers,
    sample_crops,
    standardize_crops,
)
from sleap_infer.runtimes.runtime import backend_maker

from model_factory import config_dict, write_model_dir

CROP = 32


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def _lone(model: LoadedModel, runtime: str = "torch") -> EmbeddingLayer:
    """The lone layer, as ``build_layer`` builds a single model's layer (``_make``)."""
    return EmbeddingLayer(model.config, backend_maker(runtime, "cpu")(model), PredictOptions())


def _embedding_dir(tmp_path: Path, name: str = "emb", **pre: object) -> Path:
    raw = config_dict(
        "embedding",
        unet={"output_stride": 8},  # pinned to max_stride at training: no decoder
        preprocessing={"crop_size": CROP, **pre},
    )
    return write_model_dir(tmp_path / name, raw)


# ------------------------------------------------------------------ head modules
def test_gem_pools_the_generalised_mean_with_clamped_exponent() -> None:
    x = torch.tensor([[[[1.0, 2.0], [3.0, -5.0]]]])  # negatives pool as ~0 (floor 1e-6)
    gem = GeM()
    with torch.no_grad():
        gem.p.fill_(2.0)
        want = math.sqrt((1 + 4 + 9 + 1e-12) / 4)
        assert gem(x).item() == pytest.approx(want, rel=1e-6)
        gem.p.fill_(10.0)  # used as 6
        want = ((1 + 2**6 + 3**6 + 1e-36) / 4) ** (1 / 6)
        assert gem(x).item() == pytest.approx(want, rel=1e-5)
        gem.p.fill_(0.25)  # used as 1: a plain mean of the floored input
        assert gem(x).item() == pytest.approx((1 + 2 + 3 + 1e-6) / 4, rel=1e-6)
    assert gem(x).shape == (1, 1)


def test_l2norm_makes_unit_vectors_and_keeps_zero() -> None:
    out = L2Norm()(torch.tensor([[3.0, 4.0], [0.0, 0.0]]))
    assert out.tolist() == [[pytest.approx(0.6), pytest.approx(0.8)], [0.0, 0.0]]


# ------------------------------------------------------------- standardisation
def test_standardize_per_crop_and_channel_without_dividing_by_255() -> None:
    g = torch.tensor([0.0, 100.0, 200.0, 100.0]).reshape(1, 1, 2, 2)
    rgb = torch.cat([g, g * 0.5, g + 10], dim=1)
    out = standardize_crops(rgb)
    std = math.sqrt((100**2 * 2) / 4) + 1e-5
    assert out[0, 0].flatten().tolist() == pytest.approx([-100 / std, 0, 100 / std, 0], rel=1e-6)
    assert torch.allclose(out[0, 1], out[0, 0], atol=1e-5)  # each channel on its own
    assert torch.allclose(out[0, 2], out[0, 0], atol=1e-5)


def test_standardize_floors_the_std_at_one_grey_level() -> None:
    flat = torch.full((1, 1, 4, 4), 77.0)
    assert standardize_crops(flat).abs().max().item() == 0.0
    tiny = torch.tensor([10.0, 10.5, 10.0, 10.5]).reshape(1, 1, 2, 2)  # std 0.25 -> 1
    assert standardize_crops(tiny).flatten().tolist() == pytest.approx([-0.25, 0.25] * 2)


def test_burn_in_standardizes_the_foreground_and_fills_the_background() -> None:
    g = torch.tensor([10.0, 30.0, 200.0, 250.0]).reshape(1, 1, 2, 2)
    m = torch.tensor([1.0, 1.0, 0.0, 0.0]).reshape(1, 1, 2, 2)
    black = standardize_crops(g, m, "black").flatten().tolist()
    std = 10 + 1e-5
    assert black == pytest.approx([-1.0, 1.0, 0.0, 0.0], rel=1e-5)
    grey = standardize_crops(g, m, "grey").flatten().tolist()
    assert grey[2:] == pytest.approx([(127.5 - 20) / std] * 2, rel=1e-5)


# ------------------------------------------------------------------------ crops
def test_crop_samples_a_ramp_at_the_magnified_pixel_centres() -> None:
    """Source value = 2 * x: output pixel j must read x = c - crop/2 + (j + .5)(crop - 1)/crop."""
    width, size = 128, 16
    ramp = (2 * np.arange(width)).astype(np.uint8)
    frames = torch.from_numpy(np.tile(ramp, (1, 1, 64, 1)))  # (1, 1, 64, 128)
    centers = torch.tensor([[60.3, 30.0], [91.71, 20.5]])
    crops = sample_crops(frames, torch.tensor([0, 0]), centers, size)
    assert crops.shape == (2, 1, size, size) and crops.dtype == torch.uint8
    j = np.arange(size)
    for k, (cx, _) in enumerate(centers.tolist()):
        pos = cx - size / 2 + (j + 0.5) * (size - 1) / size
        got = crops[k, 0].numpy().astype(float)
        assert np.abs(got - 2 * pos[None, :]).max() <= 0.5 + 1e-3
        assert (got == got[:1]).all()  # constant along y


def test_crop_off_the_frame_is_black_with_a_faded_edge() -> None:
    frames = torch.full((1, 1, 32, 32), 200, dtype=torch.uint8)
    crop = sample_crops(frames, torch.tensor([0]), torch.tensor([[0.3, 16.0]]), 16)[0, 0]
    row = crop[8].tolist()
    # The box starts at x = -7.2 and each output pixel spans 15/16 source pixels: pixels
    # 0-6 lie left of the frame (black), pixel 7 straddles x = 0 (32% covered: faded),
    # the rest read the frame (its edge column clamped).
    assert row[:7] == [0] * 7
    assert row[7] == round(200 * (1 - 7.2 / (15 / 16) + 7))
    assert row[8:] == [200] * 8


def test_pose_centers_nanmean_anchor_and_bbox() -> None:
    pts = np.array(
        [[[0.0, 0.0], [4.0, 2.0], [np.nan, np.nan]], [[np.nan, np.nan], [1.0, 1.0], [3.0, 5.0]]],
        np.float32,
    )
    assert pose_centers(pts).tolist() == [[2.0, 1.0], [2.0, 3.0]]
    anchored = pose_centers(pts, "anchor", anchor=0)
    assert anchored.tolist() == [[0.0, 0.0], [2.0, 3.0]]  # missing anchor -> nan-mean
    box = np.array([[[0.0, 0.0], [4.0, 8.0], [1.0, 1.0]]], np.float32)
    assert pose_centers(box, "bbox_center").tolist() == [[2.0, 4.0]]
    assert not np.isfinite(pose_centers(np.full((1, 3, 2), np.nan, np.float32))).any()


def test_mask_center_on_the_image_grid_with_scale_and_offset() -> None:
    grid = np.zeros((4, 4), bool)
    grid[1, 1:3] = True  # stride-2 mask: image rows 2-3, columns 2-5, then offset (10, 20)
    pixels = mask_pixels(grid, (0.5, 0.5), (10.4, 19.6), (64, 64))
    ys, xs = np.nonzero(pixels)
    assert (ys.min(), ys.max(), xs.min(), xs.max()) == (22, 23, 12, 15)
    assert mask_center(pixels) == (13.5, 22.5)
    assert mask_center(pixels, "bbox") == (13.5, 22.5)
    assert mask_center(np.zeros((10, 20), bool)) == (10.0, 5.0)


# ------------------------------------------------------------ registry / loading
def test_registry_pairs_centroid_with_embedding() -> None:
    entry = registry.model_type("embedding")
    assert entry.embeds and entry.raw_export and entry.pair is not None
    assert entry.pair.name == "topdown_embedding"
    assert registry.pair_roles(["embedding", "centroid"]) == (1, 0)


def _with_extra_keys(path: Path, extra: dict[str, torch.Tensor]) -> None:
    ckpt = load_checkpoint(path / "best.ckpt")
    ckpt["state_dict"].update(extra)
    torch.save(ckpt, path / "best.ckpt")


def test_projection_keys_are_dropped_and_other_strays_refused(tmp_path: Path) -> None:
    emb = _embedding_dir(tmp_path)
    projection = {
        "projection.0.weight": torch.zeros(4, 8),
        "projection.0.bias": torch.zeros(4),
        "projection.2.weight": torch.zeros(4, 4),
        "projection.2.bias": torch.zeros(4),
    }
    _with_extra_keys(emb, projection)
    model = load_model(emb)
    keys = set(model.network.state_dict())
    assert "head_layers.0.pre_embedding_pool.p" in keys
    assert not any(k.startswith("backbone.decoders") for k in keys)
    _with_extra_keys(emb, {"projection.4.weight": torch.zeros(1)})
    with pytest.raises(ModelError, match="projection.4.weight"):
        load_model(emb)
    centroid = write_model_dir(tmp_path / "centroid", config_dict("centroid"))
    _with_extra_keys(centroid, {"projection.0.weight": torch.zeros(1)})
    with pytest.raises(ModelError, match="outside 'model.'"):
        load_model(centroid)


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_parameter_free_pools(tmp_path: Path, pool: str) -> None:
    raw = config_dict("embedding", unet={"output_stride": 8}, preprocessing={"crop_size": CROP})
    raw["model_config"]["head_configs"]["embedding"]["embedding"]["pool"] = pool
    model = load_model(write_model_dir(tmp_path / pool, raw))
    assert not any("pre_embedding_pool" in k for k in model.network.state_dict())
    vec = _lone(model).embed_crops(torch.randint(0, 256, (3, 1, CROP, CROP), dtype=torch.uint8))
    assert np.allclose(np.linalg.norm(vec, axis=1), 1.0, atol=1e-5)


# ---------------------------------------------------------- random-weight runs
def test_random_model_embeds_points_and_masks(tmp_path: Path) -> None:
    model = load_model(_embedding_dir(tmp_path))
    layer = _lone(model)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (2, 48, 64, 3), dtype=np.uint8)  # RGB in, grey model
    points = np.full((2, 3, 3, 2), np.nan, np.float32)
    points[0, 0] = [[10, 10], [20, 12], [np.nan, np.nan]]
    points[1, 1] = [[40, 30], [44, 34], [50, 40]]
    valid = np.array([[True, True, False], [False, True, False]])
    out = layer.embed_points(frames, points, valid)
    assert out.shape == (2, 3, 8) and out.dtype == np.float32
    found = ~np.isnan(out).any(axis=2)
    assert found.tolist() == [[True, False, False], [False, True, False]]  # (0, 1): no node
    assert np.allclose(np.linalg.norm(out[found], axis=1), 1.0, atol=1e-5)

    grid = np.zeros((48, 64), bool)
    grid[10:20, 5:25] = True
    masks = MaskSet.build(
        [0, 1, 1], [grid, grid, np.zeros_like(grid)], [1.0] * 3, [(1.0, 1.0)] * 3, [(0, 0)] * 3
    )
    vec = layer.embed_masks(frames, masks)
    assert vec.shape == (3, 8)
    assert np.isfinite(vec[:2]).all() and np.isnan(vec[2]).all()
    with pytest.raises(UsageError, match="describes detections"):
        layer.predict(frames)


def test_burn_in_runs_on_torch_only(tmp_path: Path) -> None:
    model = load_model(_embedding_dir(tmp_path, burn_in=True, background_fill="grey"))
    layer = _lone(model)
    frames = np.random.default_rng(1).integers(0, 256, (1, 40, 40, 1), dtype=np.uint8)
    grid = np.zeros((40, 40), bool)
    grid[5:30, 8:20] = True
    vec = layer.embed_masks(frames, MaskSet.build([0], [grid], [1.0], [(1.0, 1.0)], [(0, 0)]))
    assert np.isfinite(vec).all()
    with pytest.raises(UsageError, match="burn"):
        _lone(model, "onnx")


def test_centroid_plus_embedding_is_a_one_node_pipeline(tmp_path: Path) -> None:
    emb = load_model(_embedding_dir(tmp_path))
    cen = load_model(write_model_dir(tmp_path / "c", config_dict("centroid")))
    layer = build_layer([emb, cen], backend_maker("torch", "cpu"), PredictOptions())
    assert isinstance(layer, TopDownEmbeddingLayer)
    assert layer.config.node_names == ("centroid",)
    frames = np.random.default_rng(2).integers(0, 256, (2, 64, 64, 1), dtype=np.uint8)
    preds = layer.predict(frames)
    assert preds.points.shape[2] == 1 and preds.embeddings is not None
    assert preds.embeddings.shape[:2] == preds.valid.shape
    assert np.isfinite(preds.embeddings[preds.valid]).all()
    assert np.isnan(preds.embeddings[~preds.valid]).all()
    assert preds.take(1).embeddings.shape[0] == 1


def test_onnx_matches_torch_on_a_random_model(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    model = load_model(_embedding_dir(tmp_path))
    crops = torch.randint(0, 256, (5, 1, CROP, CROP), dtype=torch.uint8)
    ours = _lone(model).embed_crops(crops)
    onnx = _lone(model, "onnx").embed_crops(crops)
    assert np.abs(ours - onnx).max() < 1e-5


# -------------------------------------------------------------- sleap-nn parity
@pytest.fixture(scope="module")
def synthetic(shared: Path) -> dict[str, object]:
    import sleap_io as sio

    paths = {
        "model": shared / "models" / "synthetic_embedding",
        "centroid": shared / "models" / "synthetic_centroid",
        "labels": shared / "videos" / "synthetic_multi.pkg.slp",
        "lone": shared / "reference" / "embedding.slp",
        "fused": shared / "reference" / "embedding_fused.slp",
    }
    missing = [str(p) for p in paths.values() if not p.exists()]
    if missing:
        pytest.skip(f"embedding fixtures missing: {missing}")
    labels = sio.load_slp(str(paths["labels"]))
    return {
        **paths,
        "frames": np.stack([lf.image for lf in labels]),
        "labels": labels,
        "lone": sio.load_slp(str(paths["lone"])),
        "fused": sio.load_slp(str(paths["fused"])),
    }


def _mask_set(labels: object) -> MaskSet:
    """Every mask of every frame, as stored (run lengths copied, not re-encoded)."""
    items = [(b, m) for b, lf in enumerate(labels) for m in lf.masks]  # type: ignore[attr-defined]
    return MaskSet(
        frame=np.array([b for b, _ in items], np.int32),
        score=np.ones(len(items), np.float32),
        size=np.array([(m.height, m.width) for _, m in items], np.int32),
        scale=np.array([m.scale for _, m in items], np.float64),
        offset=np.array([m.offset for _, m in items], np.float64),
        rle=np.concatenate([np.asarray(m.rle_counts, np.uint32) for _, m in items]),
        rle_len=np.array([len(m.rle_counts) for _, m in items], np.int64),
    )


def test_lone_model_matches_sleap_nn_on_masks(synthetic: dict) -> None:
    model = load_model(synthetic["model"])  # strict: the projection head is dropped
    assert model.config.embedding is not None
    assert model.config.embedding.detection_mode == "mask"
    masks = _mask_set(synthetic["labels"])
    ref = np.stack([m.identity_embedding.vector for lf in synthetic["lone"] for m in lf.masks])
    torch_vec = _lone(model).embed_masks(synthetic["frames"], masks)
    assert _cosines(torch_vec, ref).min() >= 0.999
    pytest.importorskip("onnxruntime")
    onnx_vec = _lone(model, "onnx").embed_masks(synthetic["frames"], masks)
    assert np.abs(onnx_vec - torch_vec).max() < 1e-5
    assert _cosines(onnx_vec, ref).min() >= 0.999


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
def test_fused_centroid_embedding_matches_sleap_nn(synthetic: dict, runtime: str) -> None:
    if runtime == "onnx":
        pytest.importorskip("onnxruntime")
    models = [load_model(synthetic["centroid"]), load_model(synthetic["model"])]
    layer = build_layer(models, backend_maker(runtime, "cpu"), PredictOptions())
    frames = synthetic["frames"]
    cos: list[float] = []
    for start in range(0, len(frames), 8):
        preds = layer.predict(frames[start : start + 8])
        for b in range(preds.batch_size):
            lf = synthetic["fused"][start + b]
            slots = np.flatnonzero(preds.valid[b])
            assert len(slots) == len(lf.instances)
            for k, inst in zip(slots, lf.instances):
                assert np.abs(preds.points[b, k, 0] - inst.numpy()[0]).max() < 1e-3
                assert preds.instance_scores[b, k] == pytest.approx(inst.score, abs=1e-5)
                assert preds.embeddings is not None
                ref = inst.identity_embedding.vector
                cos.append(float(_cosines(preds.embeddings[b, k][None], ref[None])[0]))
    assert len(cos) == 48 and min(cos) >= 0.999
