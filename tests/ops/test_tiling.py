"""Tiled (sliding-window) inference: grid, window, stitching, the layer, parity with sleap-nn.

The parity references are what ``sleap-nn predict --device cpu`` (0.3.5) wrote
for the tiled fixture models (``../shared/fixtures/reference/*_tiled.slp``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio
import torch
import torch.nn.functional as F

from sleap_infer.core.config import Tiling
from sleap_infer.core.errors import ConfigError, UsageError
from sleap_infer.layers import PredictOptions, SingleInstanceLayer, build_layer
from sleap_infer.layers.tiled import TiledLayer
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model
from sleap_infer.ops.tiling import (
    TileCanvas,
    axis_origins,
    cut_tiles,
    importance_window,
    stitch,
    tile_grid,
)
from sleap_infer.runtimes import backend_maker

from fakes import FakeBackend
from model_factory import config_dict, write_model_dir

PX = 1e-3
SCORE = 1e-4
MASK_SCORE = 1e-5
HEAD = "SingleInstanceConfmapsHead"
TILING = {"enabled": True, "tile_size": 32, "overlap": 8, "tile_batch_size": 5}


# ----------------------------------------------------------------------- grid
@pytest.mark.parametrize(("size", "expected"), [(128, [0, 48, 64]), (256, [0, 48, 96, 144, 192])])
def test_axis_origins_worked_examples(size: int, expected: list[int]) -> None:
    # The fixtures' geometry: T=64, overlap 16, output stride 2, max stride 16.
    assert axis_origins(size, 64, 16, 2, 16, 0.25) == expected


@pytest.mark.parametrize("size", [1, 40, 64])
def test_axis_no_longer_than_a_tile_is_one_tile(size: int) -> None:
    assert axis_origins(size, 64, 16, 2, 16) == [0]


def test_axis_step_falls_back_to_output_stride_below_max_stride() -> None:
    # overlap 8 -> step 24 < max stride 32: snapped to the output stride (4) instead;
    # the last tile is pulled in to end on the edge (68 + 32 = 100).
    assert axis_origins(100, 32, 8, 4, 32) == [0, 24, 48, 68]
    # max stride not a multiple of the output stride: output-stride snapping too.
    assert axis_origins(100, 32, 0, 3, 8) == [0, 24, 48, 66]


def test_axis_min_overlap_uses_python_round() -> None:
    # round(0.25 * 10) = round(2.5) = 2 (half to even): step 8, not 7.
    assert axis_origins(30, 10, 0, 1, 1, 0.25) == [0, 8, 16, 20]
    # A larger requested overlap wins over the floor.
    assert axis_origins(30, 10, 5, 1, 1, 0.25) == [0, 5, 10, 15, 20]


def test_tile_grid_is_row_major() -> None:
    assert tile_grid(128, 64, 64, 16, 2, 16) == [(0, 0), (48, 0), (64, 0)]
    grid = tile_grid(100, 128, 64, 16, 2, 16)
    assert grid == [(y, x) for y in (0, 36) for x in (0, 48, 64)]


# --------------------------------------------------------------------- window
def test_gaussian_window_odd_has_unit_peak_even_does_not() -> None:
    odd = importance_window(5, 5, "gaussian", 0.25)
    assert odd.dtype == torch.float32
    assert float(odd[2, 2]) == 1.0
    assert float(odd.max()) == 1.0
    even = importance_window(4, 4, "gaussian", 0.25)
    assert float(even.max()) < 1.0
    # The four centre cells tie.
    assert torch.equal(even[1:3, 1:3], torch.full((2, 2), float(even[1, 1])))
    c = np.arange(4) - 1.5
    g = np.exp(-(c**2) / (2 * (0.25 * 4) ** 2))
    np.testing.assert_allclose(even.numpy(), np.outer(g, g), rtol=1e-6)


def test_gaussian_window_is_per_axis_and_floored() -> None:
    w = importance_window(32, 16, "gaussian", 0.125)
    assert w.shape == (32, 16)
    cy, cx = np.arange(32) - 15.5, np.arange(16) - 7.5
    expected = np.outer(np.exp(-(cy**2) / (2 * 4.0**2)), np.exp(-(cx**2) / (2 * 2.0**2)))
    np.testing.assert_allclose(w.numpy(), np.maximum(expected, 1e-3), rtol=1e-5)
    assert float(w.min()) == pytest.approx(1e-3)  # corners (~1e-7) raised to the floor


def test_pyramid_and_constant_windows() -> None:
    np.testing.assert_allclose(
        importance_window(1, 4, "pyramid").numpy(), [[0.5, 1.0, 1.0, 0.5]], rtol=0
    )
    ramp = np.array([1, 2, 3, 2, 1]) / 3
    np.testing.assert_allclose(
        importance_window(5, 5, "pyramid").numpy(), np.outer(ramp, ramp), rtol=1e-6
    )
    assert torch.equal(importance_window(3, 2, "constant"), torch.ones(3, 2))
    with pytest.raises(ValueError, match="unknown tile blend"):
        importance_window(4, 4, "cosine")


# ------------------------------------------------------------------ stitching
def _cells(origins: list[tuple[int, int]], stride: int) -> list[tuple[int, int]]:
    return [(y // stride, x // stride) for y, x in origins]


@pytest.mark.parametrize("blend", ["gaussian", "pyramid", "constant"])
def test_stitching_a_constant_map_returns_the_constant(blend: str) -> None:
    origins = tile_grid(100, 76, 32, 8, 2, 8)
    maps = torch.full((len(origins) * 2, 3, 16, 16), 0.37)
    merged = stitch(maps, _cells(origins, 2), (50, 38), importance_window(16, 16, blend))
    assert merged.shape == (2, 3, 50, 38)
    torch.testing.assert_close(merged, torch.full_like(merged, 0.37), rtol=0, atol=1e-6)


def test_stitching_tiles_cut_from_a_smooth_map_gives_the_map_back() -> None:
    yy, xx = torch.meshgrid(torch.arange(50.0), torch.arange(38.0), indexing="ij")
    smooth = torch.stack([torch.sin(yy / 7) * torch.cos(xx / 5), (yy + 2 * xx) / 100])
    frames = torch.stack([smooth, 1 - smooth, 2 * smooth])  # (3, 2, 50, 38)
    origins = tile_grid(50, 38, 16, 4, 1, 4)
    tiles = cut_tiles(frames, origins, 16)  # position-major
    assert tiles.shape == (len(origins) * 3, 2, 16, 16)
    window = importance_window(16, 16, "gaussian")
    merged = stitch(tiles, origins, (50, 38), window)
    torch.testing.assert_close(merged, frames, rtol=1e-6, atol=1e-6)
    # Feeding the same tiles in uneven chunks is bit-identical.
    canvas = TileCanvas(3, 2, (50, 38), origins, window)
    for start, stop in [(0, 1), (1, 8), (8, 9), (9, len(tiles))]:
        canvas.add(tiles[start:stop])
    assert torch.equal(canvas.merge(), merged)


def test_cut_tiles_is_position_major_and_pads_small_frames() -> None:
    frames = torch.arange(2 * 1 * 20 * 12, dtype=torch.float32).reshape(2, 1, 20, 12) + 1
    tiles = cut_tiles(frames, [(0, 0), (4, 0)], 16)
    assert tiles.shape == (4, 1, 16, 16)
    for k, (y, _) in enumerate([(0, 0), (4, 0)]):
        for b in range(2):
            tile = tiles[k * 2 + b, 0]
            assert torch.equal(tile[:, :12], frames[b, 0, y : y + 16])
            assert not tile[:, 12:].any()  # width 12 < 16: zero-padded on the right
    with pytest.raises(ValueError, match="reach past"):
        cut_tiles(frames, [(8, 0)], 16)


def test_canvas_refuses_incomplete_or_excess_tiles() -> None:
    canvas = TileCanvas(1, 1, (8, 8), [(0, 0), (0, 4)], torch.ones(4, 4))
    canvas.add(torch.ones(1, 1, 4, 4))
    with pytest.raises(ValueError, match="1 of 2"):
        canvas.merge()
    with pytest.raises(ValueError, match="more tile maps"):
        canvas.add(torch.ones(2, 1, 4, 4))
    with pytest.raises(ValueError, match="leaves"):
        TileCanvas(1, 1, (8, 8), [(0, 6)], torch.ones(4, 4))


# ---------------------------------------------------------------------- layer
def _pooling_backend() -> FakeBackend:
    """A 'network' whose three confmaps are the tile 2x2-average-pooled (output stride 2)."""
    return FakeBackend(lambda x: {HEAD: F.avg_pool2d(x.float() / 255, 2).repeat(1, 3, 1, 1)})


def _tiled_fake(
    preprocessing: dict | None = None, **options: object
) -> tuple[TiledLayer, FakeBackend]:
    pre = {"tiling": TILING, **(preprocessing or {})}
    cfg = parse_config(config_dict("single_instance", preprocessing=pre))
    backend = _pooling_backend()
    inner = SingleInstanceLayer(cfg, backend, PredictOptions(**options))
    assert cfg.preprocessing.tiling is not None
    return TiledLayer(inner, cfg.preprocessing.tiling), backend


def test_tiled_layer_stitches_the_whole_frame_map_and_decodes_it() -> None:
    # Size matcher in the config is ignored: frames stay 70x90 (padded to stride 2 only).
    layer, backend = _tiled_fake(
        {"max_height": 40, "max_width": 40}, peak_threshold=0.1, return_confmaps=True
    )
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 20, (3, 69, 90, 1)).astype(np.uint8)
    spots = [(10, 6), (60, 40), (34, 62)]  # (x, y) per frame, on even pixels
    for b, (x, y) in enumerate(spots):
        frames[b, max(y - 5, 0) : y + 7, max(x - 5, 0) : x + 7] = 0  # a clean refinement patch
        frames[b, y : y + 2, x : x + 2] = 250
    preds = layer.predict(frames)
    # Padded to 70x90 (output stride 2), 32px tiles: 3 x 4 per frame, 36 in chunks of 5.
    assert layer.grid(70, 90) == [(y, x) for y in (0, 24, 38) for x in (0, 24, 48, 58)]
    assert [t.shape[0] for t in backend.inputs] == [5] * 7 + [1]
    assert all(tuple(t.shape[1:]) == (1, 32, 32) and t.dtype == torch.uint8 for t in backend.inputs)
    padded = F.pad(torch.from_numpy(frames).permute(0, 3, 1, 2), (0, 0, 0, 1))
    whole = F.avg_pool2d(padded.float() / 255, 2).repeat(1, 3, 1, 1)
    np.testing.assert_allclose(preds.extras["confmaps"], whole.numpy(), rtol=0, atol=1e-6)
    # One peak per node at the spot's cell, x output stride.
    for b, (x, y) in enumerate(spots):
        np.testing.assert_allclose(preds.points[b, 0], [[x, y]] * 3, atol=1e-4)
    assert preds.valid.all()


def test_tiled_layer_decodes_with_the_right_coordinate_ladder() -> None:
    layer, _ = _tiled_fake({"scale": 0.5}, peak_threshold=0.1)
    frames = np.zeros((2, 180, 140, 1), np.uint8)
    frames[0, 100:104, 40:44] = 255  # halved twice (scale, stride): grid cell (10, 25)
    frames[1, 20:24, 120:124] = 255
    preds = layer.predict(frames)
    # Grid cell c -> input pixel 2c -> frame pixel 4c (the blob's antialiasing is symmetric).
    np.testing.assert_allclose(preds.points[0, 0], [[40.0, 100.0]] * 3, atol=1e-4)
    np.testing.assert_allclose(preds.points[1, 0], [[120.0, 20.0]] * 3, atol=1e-4)


def test_tiled_layer_warms_every_chunk_shape() -> None:
    layer, backend = _tiled_fake({"ensure_rgb": True})
    layer.warmup((3, 69, 90, 1))
    assert backend.warmups == [(5, 3, 32, 32), (1, 3, 32, 32)]  # 36 tiles in chunks of 5
    assert backend.inputs == []


def test_tiled_layer_refuses_in_graph_backends_and_bad_geometry() -> None:
    cfg = parse_config(config_dict("single_instance", preprocessing={"tiling": TILING}))
    backend = _pooling_backend()
    inner = SingleInstanceLayer(cfg, backend)
    backend.does_baked_postproc = True  # type: ignore[misc]
    with pytest.raises(UsageError, match="in-graph"):
        TiledLayer(inner, Tiling(tile_size=32))
    backend.does_baked_postproc = False  # type: ignore[misc]
    with pytest.raises(ConfigError, match="not a multiple of 8"):
        TiledLayer(inner, Tiling(tile_size=36))  # max stride 8
    assert TiledLayer(inner, Tiling(tile_size=32, tile_batch_size=0)).tile_batch == 8  # as sleap-nn
    with pytest.raises(ConfigError, match="must be positive"):
        TiledLayer(inner, Tiling(tile_size=32, tile_batch_size=-1))


def _random_models(tmp_path: Path, preprocessing: dict) -> tuple[TiledLayer, SingleInstanceLayer]:
    raw = config_dict("single_instance", preprocessing={"tiling": TILING, **preprocessing})
    model = load_model(write_model_dir(tmp_path / "tiled", raw))
    options = PredictOptions(peak_threshold=0.0, return_confmaps=True)
    make = backend_maker("torch", "cpu")
    tiled = build_layer([model], make, options)
    assert isinstance(tiled, TiledLayer)
    plain = SingleInstanceLayer(model.config, make(model), options)
    return tiled, plain


def test_tiled_random_model_on_one_tile_equals_the_plain_model(tmp_path: Path) -> None:
    tiled, plain = _random_models(tmp_path, {})
    assert tiled.model_type == "tiled"
    assert isinstance(tiled.inner, SingleInstanceLayer)
    assert tiled.config is tiled.inner.config
    assert tiled.input_channels == 1
    assert tiled.device == torch.device("cpu")
    frames = np.random.default_rng(1).integers(0, 255, (3, 32, 32, 1)).astype(np.uint8)
    a, b = tiled.predict(frames), plain.predict(frames)
    # One tile per frame: (map * w) / w, equal up to float rounding.
    np.testing.assert_allclose(a.extras["confmaps"], b.extras["confmaps"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(a.points, b.points, atol=1e-4)
    np.testing.assert_allclose(a.instance_scores, b.instance_scores, atol=1e-5)


def test_tiled_random_model_input_scale_matches_plain(tmp_path: Path) -> None:
    # scale 0.5 turns 64x64 frames into one 32x32 tile: the plain model's input too.
    tiled, plain = _random_models(tmp_path, {"scale": 0.5})
    frames = np.random.default_rng(2).integers(0, 255, (2, 64, 64, 1)).astype(np.uint8)
    a, b = tiled.predict(frames), plain.predict(frames)
    np.testing.assert_allclose(a.extras["confmaps"], b.extras["confmaps"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(a.points, b.points, atol=1e-4)


def test_tiled_random_model_batching_changes_nothing_but_noise(tmp_path: Path) -> None:
    tiled, _ = _random_models(tmp_path, {})
    frames = np.random.default_rng(3).integers(0, 255, (3, 75, 61, 1)).astype(np.uint8)
    together = tiled.predict(frames)
    alone = [tiled.predict(frames[i : i + 1]) for i in range(3)]
    assert together.extras["confmaps"].shape == (3, 3, 38, 31)
    maps = np.concatenate([p.extras["confmaps"] for p in alone])
    np.testing.assert_allclose(together.extras["confmaps"], maps, rtol=0, atol=1e-5)


# ---------------------------------------------------------- parity (fixtures)
def _frames(shared: Path, name: str) -> np.ndarray:
    video = sio.load_slp(str(shared / "videos" / name)).videos[0]
    return np.stack([video[i] for i in range(len(video))])


def _fixture_layer(shared: Path, name: str) -> TiledLayer:
    layer = build_layer(
        [load_model(shared / "models" / name)], backend_maker("torch", "cpu"), PredictOptions()
    )
    assert isinstance(layer, TiledLayer)
    return layer


def test_single_instance_tiled_parity_with_sleap_nn(shared: Path) -> None:
    layer = _fixture_layer(shared, "synthetic_single_instance_tiled")
    frames = _frames(shared, "synthetic_single.pkg.slp")
    ref = {
        lf.frame_idx: lf for lf in sio.load_slp(str(shared / "reference/single_instance_tiled.slp"))
    }
    assert len(frames) == 12
    worst_px = worst_score = 0.0
    for start in range(0, len(frames), 4):
        preds = layer.predict(frames[start : start + 4])
        for b in range(preds.batch_size):
            found = preds.frame(b)
            instances = ref[start + b].instances if start + b in ref else []
            assert len(found) == len(instances)
            for got, want in zip(found, instances):
                worst_px = max(worst_px, float(np.abs(got["points"] - want.numpy()).max()))
                node_scores = np.asarray(want.points["score"])
                worst_score = max(
                    worst_score,
                    abs(got["score"] - want.score),
                    float(np.abs(got["point_scores"] - node_scores).max()),
                )
    assert worst_px <= PX
    assert worst_score <= SCORE


def _needs_segmentation() -> None:
    if importlib.util.find_spec("sleap_infer.layers.segmentation") is None:
        pytest.skip("sleap_infer.layers.segmentation (the segmentation decoders) is not there yet")


@pytest.mark.parametrize(
    ("model", "reference"),
    [
        ("synthetic_bottomup_segmentation_tiled", "bottomup_segmentation_tiled.slp"),
        ("synthetic_semantic_segmentation_tiled", "semantic_segmentation_tiled.slp"),
    ],
)
def test_segmentation_tiled_parity_with_sleap_nn(shared: Path, model: str, reference: str) -> None:
    _needs_segmentation()
    layer = _fixture_layer(shared, model)
    frames = _frames(shared, "synthetic_multi.pkg.slp")
    ref = {lf.frame_idx: lf for lf in sio.load_slp(str(shared / "reference" / reference))}
    assert len(frames) == 24
    total = 0
    for start in range(0, len(frames), 4):
        preds = layer.predict(frames[start : start + 4])
        masks = preds.masks
        assert masks is not None
        for b in range(preds.batch_size):
            mine = np.flatnonzero(masks.frame == b)
            theirs = ref[start + b].masks if start + b in ref else []
            assert len(mine) == len(theirs), f"frame {start + b}"
            for k, want in zip(mine, theirs):
                assert np.array_equal(masks.mask(int(k)), np.asarray(want.data, bool))
                assert abs(float(masks.score[k]) - float(want.score)) <= MASK_SCORE
                np.testing.assert_allclose(masks.scale[k], want.scale, rtol=1e-6)
                np.testing.assert_allclose(masks.offset[k], want.offset, atol=1e-6)
            total += len(mine)
    assert total == sum(len(lf.masks) for lf in ref.values())
