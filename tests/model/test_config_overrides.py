"""Predict-time config overrides: which model of a pair each lands on, validation, parity."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.core.config import EmbeddingSettings, ModelConfig, Preprocessing, UNetConfig
from sleap_infer.core.errors import UsageError
from sleap_infer.core.overrides import ConfigOverrides
from sleap_infer.model.loader import LoadedModel
from sleap_infer.model.overrides import apply_overrides


def _model(model_type: str, pre: Preprocessing | None = None, **config: object) -> LoadedModel:
    cfg = ModelConfig(
        model_type=model_type,
        backbone=UNetConfig(),
        heads=(),
        preprocessing=pre or Preprocessing(max_height=384, max_width=384, crop_size=96),
        node_names=("head", "thorax"),
        edges=((0, 1),),
        **config,  # type: ignore[arg-type]
    )
    return LoadedModel(Path(model_type), cfg, torch.nn.Identity(), "sha")


def _pair(crop_type: str = "centered_instance", detector: str = "centroid") -> list[LoadedModel]:
    return [_model(detector), _model(crop_type)]


# ---- the record ----------------------------------------------------------------------


def test_inactive_by_default_and_json() -> None:
    assert not ConfigOverrides().active
    o = ConfigOverrides(input_scale=0.5, ensure_rgb=False)
    assert o.active
    assert o.given == {"input_scale": 0.5, "ensure_rgb": False}
    assert o.to_json()["crop_size"] is None


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"max_height": 0}, "--max-height"),
        ({"max_width": -8}, "--max-width"),
        ({"crop_size": 0}, "--crop-size"),
        ({"input_scale": 0.0}, "--input-scale"),
        ({"input_scale": float("nan")}, "--input-scale"),
        ({"anchor_part": " "}, "--anchor-part"),
        ({"ensure_rgb": True, "ensure_grayscale": True}, "--ensure-rgb and --ensure-grayscale"),
    ],
)
def test_rejects_values_no_model_can_use(kwargs: dict, flag: str) -> None:
    with pytest.raises(UsageError, match=flag):
        ConfigOverrides(**kwargs)


# ---- where each override lands ---------------------------------------------------------


def test_inactive_returns_the_same_models() -> None:
    models = _pair()
    assert all(a is b for a, b in zip(apply_overrides(models, ConfigOverrides()), models))


def test_topdown_pair_rules() -> None:
    models = _pair()
    o = ConfigOverrides(
        max_height=256, max_width=320, input_scale=0.5, crop_size=128, ensure_rgb=True
    )
    centroid, instance = apply_overrides(models, o)
    # Whole-frame fields: stage 1 only (crops come from frames sized by stage 1).
    assert (centroid.config.preprocessing.max_height, centroid.config.preprocessing.max_width) == (
        256,
        320,
    )
    assert centroid.config.preprocessing.ensure_rgb
    assert instance.config.preprocessing.max_height == 384
    assert not instance.config.preprocessing.ensure_rgb
    # Input scale: both stages. Crop size: the crop model.
    assert centroid.config.preprocessing.scale == instance.config.preprocessing.scale == 0.5
    assert instance.config.preprocessing.crop_size == 128
    assert centroid.config.preprocessing.crop_size == 96  # untouched (inert there)
    # Copies: the originals, networks and checksums are shared, not changed.
    assert models[0].config.preprocessing.scale == 1.0
    assert centroid.network is models[0].network


def test_pair_order_does_not_matter() -> None:
    instance, centroid = apply_overrides(
        [_model("centered_instance"), _model("centroid")], ConfigOverrides(max_height=200)
    )
    assert centroid.config.preprocessing.max_height == 200
    assert instance.config.preprocessing.max_height == 384


@pytest.mark.parametrize("detector", ["centroid", "bbox_centernet"])
@pytest.mark.parametrize(
    "crop_type", ["centered_instance", "multi_class_topdown", "centered_instance_segmentation"]
)
def test_anchor_part_lands_on_both(detector: str, crop_type: str) -> None:
    stage1, stage2 = apply_overrides(
        _pair(crop_type, detector), ConfigOverrides(anchor_part="thorax", input_scale=0.75)
    )
    assert stage1.config.anchor_part == stage2.config.anchor_part == "thorax"
    assert stage2.config.anchor_index == 1
    assert stage1.config.preprocessing.scale == stage2.config.preprocessing.scale == 0.75


def test_unknown_anchor_names_the_nodes() -> None:
    with pytest.raises(UsageError, match=r"--anchor-part 'tail'.*head, thorax"):
        apply_overrides(_pair(), ConfigOverrides(anchor_part="tail"))
    with pytest.raises(UsageError, match="head, thorax"):
        apply_overrides([_model("centroid")], ConfigOverrides(anchor_part="tail"))


def test_anchor_is_inert_for_lone_non_centroid_models() -> None:
    (model,) = apply_overrides([_model("bottomup")], ConfigOverrides(anchor_part="tail"))
    assert model.config.anchor_part is None


def test_lone_model_takes_frame_fields_and_scale() -> None:
    o = ConfigOverrides(max_height=128, max_width=128, input_scale=0.5, ensure_grayscale=True)
    (model,) = apply_overrides([_model("single_instance")], o)
    pre = model.config.preprocessing
    assert (pre.max_height, pre.max_width, pre.scale, pre.ensure_grayscale) == (128, 128, 0.5, True)


def test_no_flag_turns_a_trained_flag_off() -> None:
    rgb = Preprocessing(ensure_rgb=True)
    (model,) = apply_overrides([_model("bottomup", rgb)], ConfigOverrides(ensure_rgb=False))
    assert not model.config.preprocessing.ensure_rgb


def test_the_other_trained_channel_flag_must_be_cleared() -> None:
    # sleap-nn keeps the trained ensure_grayscale: true and refuses both set.
    gray = Preprocessing(ensure_grayscale=True)
    with pytest.raises(UsageError, match="--no-ensure-grayscale"):
        apply_overrides([_model("bottomup", gray)], ConfigOverrides(ensure_rgb=True))
    (model,) = apply_overrides(
        [_model("bottomup", gray)], ConfigOverrides(ensure_rgb=True, ensure_grayscale=False)
    )
    assert model.config.preprocessing.ensure_rgb and not model.config.preprocessing.ensure_grayscale


def test_embedding_pair_keeps_trained_scale_and_uses_the_anchor() -> None:
    emb = _model("embedding", embedding=EmbeddingSettings(detection_mode="pose"))
    centroid, embedder = apply_overrides(
        [_model("centroid"), emb],
        ConfigOverrides(input_scale=0.5, crop_size=64, anchor_part="head", max_height=200),
    )
    assert centroid.config.preprocessing.scale == embedder.config.preprocessing.scale == 1.0
    assert embedder.config.preprocessing.crop_size == 64
    assert centroid.config.preprocessing.max_height == 200
    assert embedder.config.embedding is not None
    assert embedder.config.embedding.centroid_method == "anchor"


def test_lone_embedding_refuses_overrides() -> None:
    with pytest.raises(UsageError, match="--crop-size"):
        apply_overrides([_model("embedding")], ConfigOverrides(crop_size=64))


def test_unpaired_models_are_left_for_build_layer() -> None:
    models = [_model("bottomup"), _model("single_instance")]
    out = apply_overrides(models, ConfigOverrides(input_scale=0.5))
    assert [m.config for m in out] == [m.config for m in models]


# ---- end to end, against sleap-nn 0.3.5 -------------------------------------------------

# Points sleap-nn 0.3.5 wrote for frames 0 and 1 of centered_pair_small.mp4 (CPU), from:
#   sleap-nn predict --data_path centered_pair_small.mp4 --device cpu \
#     -m minimal_instance_centroid -m minimal_instance_centered_instance \
#     --input_scale 0.75 --crop_size 112 --frames 0-9 -o out.slp
# and (bottom-up):
#   sleap-nn predict --data_path centered_pair_small.mp4 --device cpu \
#     -m minimal_instance_bottomup --input_scale 0.5 --frames 0-9 -o out.slp
# benchmarks/overrides_parity.py reruns these and more cases.
_NAN = float("nan")
SLEAP_NN = {
    "topdown": (
        ("minimal_instance_centroid", "minimal_instance_centered_instance"),
        ConfigOverrides(input_scale=0.75, crop_size=112),
        [
            [[[95.3416, 202.8222], [_NAN, _NAN]]],
            [[[95.5771, 203.3862], [_NAN, _NAN]]],
        ],
    ),
    "bottomup": (
        ("minimal_instance_bottomup",),
        ConfigOverrides(input_scale=0.5),
        [
            [
                [[215.9451, 187.7448], [255.9559, 195.7586]],
                [[96.1805, 199.8127], [151.4301, 160.2155]],
            ],
            [
                [[216.0298, 187.1008], [256.1217, 195.5025]],
                [[96.4219, 200.1129], [151.5297, 160.8462]],
            ],
        ],
    ),
}


def _sorted(points: np.ndarray) -> np.ndarray:
    """Instances in a fixed order (by first node x), for comparing sets of instances."""
    return points[np.argsort(np.nan_to_num(points[:, 0, 0], nan=np.inf))]


@pytest.mark.parametrize("case", sorted(SLEAP_NN))
def test_overrides_match_sleap_nn(shared: Path, case: str) -> None:
    sio = pytest.importorskip("sleap_io")
    from sleap_infer.core.options import PredictOptions
    from sleap_infer.layers import build_layer
    from sleap_infer.model.loader import load_model
    from sleap_infer.runtimes import backend_maker

    names, overrides, expected = SLEAP_NN[case]
    video_path = shared / "videos" / "centered_pair_small.mp4"
    models = apply_overrides([load_model(shared / "models" / n) for n in names], overrides)
    layer = build_layer(models, backend_maker("torch", "cpu"), PredictOptions())
    video = sio.load_video(str(video_path))
    frames = np.stack([np.asarray(video[i]) for i in range(len(expected))])
    preds = layer.predict(frames)
    for b, want in enumerate(expected):
        got = _sorted(preds.points[b][preds.valid[b]])
        want_arr = _sorted(np.asarray(want, np.float32))
        np.testing.assert_allclose(got, want_arr, atol=0.01)


def test_override_changes_the_run(shared: Path) -> None:
    """The layer reads the overridden config, not a cached trained value."""
    from sleap_infer.core.options import PredictOptions
    from sleap_infer.layers import build_layer
    from sleap_infer.model.loader import load_model
    from sleap_infer.runtimes import backend_maker

    names = ("minimal_instance_centroid", "minimal_instance_centered_instance")
    models = [load_model(shared / "models" / n) for n in names]
    o = ConfigOverrides(input_scale=0.5, crop_size=128, max_height=256, max_width=256)
    layer = build_layer(apply_overrides(models, o), backend_maker("torch", "cpu"), PredictOptions())
    frames = np.zeros((1, 384, 384, 1), np.uint8)
    x, info = layer.preprocess(frames)
    assert tuple(x.shape[-2:]) == (128, 128)  # 384 -> 256 (size matcher) -> 128 (scale)
    assert layer.crop_size == 128 and info.input_scale == 0.5
