"""SLEAP 1.x (Keras) model folders: config translation, weight copying, refusals.

Part (a) writes tiny SLEAP 1.x folders here, with h5py, in the exact Keras 2
layout (``model_weights/<layer>/<layer>/kernel:0``, ``weight_names``
attributes, the graph JSON in ``model_config``), and checks our network
against a plain-numpy run of the same Keras graph: an independent
re-statement of Keras' maths (HWIO kernels, "same" padding, TensorFlow's
transposed-conv alignment, half-pixel bilinear upsampling, ``[skip, up]``
concatenation), so a transposed kernel, a flipped axis or a one-pixel shift
fails. Part (b) uses the public sleap-nn legacy test models (their
``dummy_activations.h5`` were made by TensorFlow itself) when
``.legacy-models/`` (``benchmarks/legacy_models.py`` extracts it) or
``$SLEAP_INFER_LEGACY_MODELS`` exists, and skips otherwise.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import sleap_io as sio
import torch

from sleap_infer.core.errors import ModelError
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model

from cli_runs import run_cli
from conftest import ROOT
from model_factory import config_dict, write_model_dir

F32 = np.float32


# ------------------------------------------------------------ a Keras graph
@dataclass
class KLayer:
    name: str
    kind: str
    inbound: list[str]
    config: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)


class Graph:
    """Builds a SLEAP 1.x-style Keras layer list with random weights."""

    def __init__(self, in_channels: int, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.layers = [KLayer("input", "InputLayer", [], {"batch_input_shape": [None] * 4})]
        self.width = {"input": in_channels}

    def add(self, layer: KLayer, width: int) -> str:
        self.layers.append(layer)
        self.width[layer.name] = width
        return layer.name

    def _random(self, *shape: int, scale: float) -> np.ndarray:
        return (self.rng.standard_normal(shape) * scale).astype(F32)

    def conv(self, name: str, src: str, out: int, k: int = 3, act: str = "linear") -> str:
        cin = self.width[src]
        kernel = self._random(k, k, cin, out, scale=1.2 / np.sqrt(k * k * cin))
        cfg = {"kernel_size": [k, k], "strides": [1, 1], "padding": "same"}
        cfg |= {"dilation_rate": [1, 1], "activation": act, "use_bias": True}
        weights = {"kernel": kernel, "bias": self._random(out, scale=0.1)}
        return self.add(KLayer(name, "Conv2D", [src], cfg, weights), out)

    def relu(self, name: str, src: str) -> str:
        return self.add(KLayer(name, "Activation", [src], {"activation": "relu"}), self.width[src])

    def conv_relu(self, conv: str, act: str, src: str, out: int) -> str:
        return self.relu(act, self.conv(conv, src, out))

    def pool(self, name: str, src: str) -> str:
        cfg = {"pool_size": [2, 2], "strides": [2, 2], "padding": "same"}
        return self.add(KLayer(name, "MaxPooling2D", [src], cfg), self.width[src])

    def up(self, prefix: str, src: str, out: int, interpolate: bool) -> str:
        if interpolate:
            cfg = {"size": [2, 2], "interpolation": "bilinear"}
            return self.add(
                KLayer(f"{prefix}_interp_bilinear", "UpSampling2D", [src], cfg), self.width[src]
            )
        cin = self.width[src]
        weights = {"kernel": self._random(3, 3, out, cin, scale=1.2 / np.sqrt(9 * cin))}
        weights["bias"] = self._random(out, scale=0.1)
        cfg = {"kernel_size": [3, 3], "strides": [2, 2], "padding": "same"}
        cfg |= {"activation": "linear", "output_padding": None, "dilation_rate": [1, 1]}
        name = self.add(KLayer(f"{prefix}_trans_conv", "Conv2DTranspose", [src], cfg, weights), out)
        return self.relu(f"{prefix}_trans_conv_act_relu", name)

    def concat(self, name: str, skip: str, up: str) -> str:
        width = self.width[skip] + self.width[up]
        return self.add(KLayer(name, "Concatenate", [skip, up], {"axis": -1}), width)

    def dense(self, name: str, src: str, out: int, act: str = "linear") -> str:
        weights = {"kernel": self._random(self.width[src], out, scale=0.5)}
        weights["bias"] = self._random(out, scale=0.1)
        return self.add(KLayer(name, "Dense", [src], {"activation": act}, weights), out)


def unet(
    g: Graph, filters: int, rate: float, max_stride: int, output_stride: int, interpolate: bool
) -> dict[int, str]:
    """SLEAP 1.x's UNet layer names; returns the feature layer of each stride."""
    depth = int(np.log2(max_stride))
    width = [int(filters * rate**i) for i in range(depth + 1)]
    x, skips = "input", []
    for i in range(depth):
        if i > 0:
            x = g.pool(f"stack0_enc{i}_pool", x)
        for j in range(2):
            x = g.conv_relu(f"stack0_enc{i}_conv{j}", f"stack0_enc{i}_act{j}_relu", x, width[i])
        skips.append(x)
    x = g.pool(f"stack0_enc{depth}_last_pool", x)
    mid = f"stack0_enc{depth + 1}_middle_expand"
    x = g.conv_relu(f"{mid}_conv0", f"{mid}_act0_relu", x, width[depth])
    mid = f"stack0_enc{depth + 2}_middle_contract"
    x = g.conv_relu(f"{mid}_conv0", f"{mid}_act0_relu", x, width[depth])
    features = {max_stride: x}
    stride = max_stride
    for j in range(int(np.log2(max_stride // output_stride))):
        prefix = f"stack0_dec{j}_s{stride}_to_s{stride // 2}"
        out = width[depth - 1 - j]
        x = g.concat(
            f"{prefix}_skip_concat", skips[depth - 1 - j], g.up(prefix, x, out, interpolate)
        )
        for k in range(2):
            x = g.conv_relu(f"{prefix}_refine_conv{k}", f"{prefix}_refine_conv{k}_act_relu", x, out)
        stride //= 2
        features[stride] = x
    return features


# ------------------------------------------------ Keras maths, in plain numpy
def _act(x: np.ndarray, name: str) -> np.ndarray:
    if name == "relu":
        return np.maximum(x, 0)
    if name == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if name == "softmax":
        e = np.exp(x - x.max())
        return e / e.sum()
    assert name == "linear", name
    return x


def _conv(layer: KLayer, a: np.ndarray) -> np.ndarray:
    kernel = layer.weights["kernel"]  # (kh, kw, in, out), cross-correlation, "same"
    k = kernel.shape[0]
    h, w = a.shape[:2]
    padded = np.pad(a, ((k // 2, k // 2), (k // 2, k // 2), (0, 0)))
    out = sum(
        padded[dy : dy + h, dx : dx + w] @ kernel[dy, dx] for dy in range(k) for dx in range(k)
    )
    return out + layer.weights["bias"]


def _transposed_conv(layer: KLayer, a: np.ndarray) -> np.ndarray:
    """TensorFlow's conv2d_transpose, stride 2, "SAME": every input pixel (i, j) writes
    its kernel at output (2i .. 2i+2, 2j .. 2j+2); the output keeps rows/cols 0 .. 2H-1."""
    kernel = layer.weights["kernel"]  # (kh, kw, out, in)
    h, w = a.shape[:2]
    full = np.zeros((2 * h + 1, 2 * w + 1, kernel.shape[2]), F32)
    for dy in range(3):
        for dx in range(3):
            full[dy : dy + 2 * h : 2, dx : dx + 2 * w : 2] += a @ kernel[dy, dx].T
    return full[: 2 * h, : 2 * w] + layer.weights["bias"]


def _bilinear2(a: np.ndarray, axis: int) -> np.ndarray:
    """x2 along ``axis``, half-pixel centres: TF2's ``UpSampling2D(interpolation="bilinear")``."""
    n = a.shape[axis]
    src = np.clip((np.arange(2 * n) + 0.5) / 2 - 0.5, 0, n - 1)
    lo = np.floor(src).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    t = (src - lo).reshape([-1 if i == axis else 1 for i in range(a.ndim)])
    return np.take(a, lo, axis) * (1 - t) + np.take(a, hi, axis) * t


def _batch_norm(layer: KLayer, a: np.ndarray) -> np.ndarray:
    w = layer.weights
    return (a - w["moving_mean"]) / np.sqrt(w["moving_variance"] + 1e-3) * w["gamma"] + w["beta"]


_OPS: dict[str, Callable[[KLayer, list[np.ndarray]], np.ndarray]] = {
    "Conv2D": lambda la, ins: _act(_conv(la, ins[0]), la.config["activation"]),
    "Conv2DTranspose": lambda la, ins: _transposed_conv(la, ins[0]),
    "Activation": lambda la, ins: _act(ins[0], la.config["activation"]),
    "MaxPooling2D": lambda la, ins: (
        ins[0].reshape(ins[0].shape[0] // 2, 2, ins[0].shape[1] // 2, 2, -1).max(axis=(1, 3))
    ),
    "UpSampling2D": lambda la, ins: _bilinear2(_bilinear2(ins[0], 0), 1),
    "Concatenate": lambda la, ins: np.concatenate(ins, axis=-1),
    "BatchNormalization": lambda la, ins: _batch_norm(la, ins[0]),
    "GlobalMaxPooling2D": lambda la, ins: ins[0].max(axis=(0, 1)),
    "Flatten": lambda la, ins: ins[0].reshape(-1),
    "Dense": lambda la, ins: _act(
        ins[0] @ la.weights["kernel"] + la.weights["bias"], la.config["activation"]
    ),
}


def keras_forward(layers: list[KLayer], image: np.ndarray) -> dict[str, np.ndarray]:
    """Every layer's output for one ``(H, W, C)`` image."""
    out = {"input": image.astype(F32)}
    for layer in layers[1:]:
        out[layer.name] = _OPS[layer.kind](layer, [out[s] for s in layer.inbound]).astype(F32)
    return out


# ----------------------------------------------------------- writing folders
def write_h5(path: Path, layers: list[KLayer], graph: bool = True) -> None:
    """The Keras 2 HDF5 layout of a whole-model save (``graph=False``: ``save_weights``)."""
    specs = [
        {
            "class_name": la.kind,
            "name": la.name,
            "config": {"name": la.name, **la.config},
            "inbound_nodes": [[[s, 0, 0, {}] for s in la.inbound]] if la.inbound else [],
        }
        for la in layers
    ]
    with h5py.File(path, "w") as f:
        root = f
        if graph:
            model = {"class_name": "Functional", "config": {"name": "model", "layers": specs}}
            f.attrs["model_config"] = json.dumps(model)
            f.attrs["keras_version"] = "2.4.0"
            root = f.create_group("model_weights")
        root.attrs["layer_names"] = np.array([la.name.encode() for la in layers])
        for la in layers:
            group = root.create_group(la.name)
            names = [f"{la.name}/{key}:0" for key in la.weights]
            group.attrs["weight_names"] = (
                np.array([n.encode() for n in names]) if names else np.array([], np.float64)
            )
            for name, value in zip(names, la.weights.values()):
                group.create_dataset(name, data=value)


def _node(name: str) -> dict[str, Any]:
    return {"py/object": "sleap.skeleton.Node", "py/state": {"py/tuple": [name, 1.0]}}


def _edge_type(kind: int) -> dict[str, Any]:
    return {"py/reduce": [{"py/type": "sleap.skeleton.EdgeType"}, {"py/tuple": [kind]}]}


def jsonpickle_skeleton() -> dict[str, Any]:
    """SLEAP 1.x's jsonpickle skeleton: nodes A (py/id 1), B (2), edge type 1 (3), C (4);
    the ``nodes`` list orders them B, A, C by reference; edge A->B, symmetry A<->C."""
    return {
        "directed": True,
        "graph": {"name": "Skeleton-7", "num_edges_inserted": 2},
        "links": [
            {
                "edge_insert_idx": 0,
                "key": 0,
                "source": _node("A"),
                "target": _node("B"),
                "type": _edge_type(1),
            },
            {
                "edge_insert_idx": 1,
                "key": 0,
                "source": {"py/id": 1},
                "target": _node("C"),
                "type": _edge_type(2),
            },
        ],
        "multigraph": True,
        "nodes": [{"id": {"py/id": 2}}, {"id": {"py/id": 1}}, {"id": {"py/id": 4}}],
    }


PARTS = ["B", "A", "C"]
CLASSES = ["female", "male"]

# SLEAP 1.x head key -> (its JSON block, [(Keras head layer, channels, stride, activation)]).
HEADS: dict[str, tuple[dict[str, Any], list[tuple[str, int, int, str]]]] = {
    "single_instance": (
        {"part_names": PARTS, "sigma": 5.0, "output_stride": 2, "offset_refinement": False},
        [("SingleInstanceConfmapsHead_0", 3, 2, "linear")],
    ),
    "centroid": (
        {"anchor_part": None, "sigma": 5.0, "output_stride": 2, "offset_refinement": True},
        [("CentroidConfmapsHead_0", 1, 2, "linear"), ("OffsetRefinementHead_0", 2, 2, "linear")],
    ),
    "centered_instance": (
        {"anchor_part": None, "part_names": PARTS, "output_stride": 1},
        [("CenteredInstanceConfmapsHead_0", 3, 1, "linear")],
    ),
    "multi_instance": (
        {
            "confmaps": {"part_names": PARTS, "output_stride": 1, "offset_refinement": False},
            "pafs": {"edges": [["A", "B"]], "sigma": 15.0, "output_stride": 2},
        },
        [
            ("MultiInstanceConfmapsHead_0", 3, 1, "linear"),
            ("PartAffinityFieldsHead_0", 2, 2, "linear"),
        ],
    ),
    "multi_class_bottomup": (
        {
            "confmaps": {"part_names": PARTS, "output_stride": 2},
            "class_maps": {"classes": CLASSES, "output_stride": 2},
        },
        [("MultiInstanceConfmapsHead_0", 3, 2, "linear"), ("ClassMapsHead_0", 2, 2, "sigmoid")],
    ),
    "multi_class_topdown": (
        {
            "confmaps": {"anchor_part": "A", "part_names": PARTS, "output_stride": 1},
            "class_vectors": {
                "classes": CLASSES,
                "num_fc_layers": 2,
                "num_fc_units": 8,
                "global_pool": True,
                "output_stride": 4,
            },
        },
        [("CenteredInstanceConfmapsHead", 3, 1, "linear")],  # no "_0", like the real file
    ),
}
KINDS = {  # SLEAP 1.x head key -> our model type
    "single_instance": "single_instance",
    "centroid": "centroid",
    "centered_instance": "centered_instance",
    "multi_instance": "bottomup",
    "multi_class_bottomup": "multi_class_bottomup",
    "multi_class_topdown": "multi_class_topdown",
}
MAX_STRIDE = 4


def legacy_json(key: str, interpolate: bool) -> dict[str, Any]:
    block, heads = HEADS[key]
    crop = 16 if KINDS[key] in ("centered_instance", "multi_class_topdown") else None
    return {
        "data": {
            "labels": {"skeletons": [jsonpickle_skeleton()]},
            "preprocessing": {
                "ensure_rgb": False,
                "ensure_grayscale": False,
                "imagenet_mode": None,
                "input_scaling": 0.5,
                "pad_to_stride": 4,
                "resize_and_pad_to_target": True,
                "target_height": None,
                "target_width": None,
            },
            "instance_cropping": {"center_on_part": None, "crop_size": crop},
        },
        "model": {
            "backbone": {
                "leap": None,
                "unet": {
                    "stem_stride": None,
                    "max_stride": MAX_STRIDE,
                    "output_stride": min(s for _, _, s, _ in heads),
                    "filters": 4,
                    "filters_rate": 1.5,
                    "middle_block": True,
                    "up_interpolate": interpolate,
                    "stacks": 1,
                },
                "hourglass": None,
                "resnet": None,
                "pretrained_encoder": None,
            },
            "heads": {k: (copy.deepcopy(block) if k == key else None) for k in HEADS},
        },
        "sleap_version": "1.1.1",
    }


def legacy_layers(key: str, interpolate: bool, in_channels: int = 1) -> list[KLayer]:
    raw = legacy_json(key, interpolate)
    g = Graph(in_channels)
    unet_cfg = raw["model"]["backbone"]["unet"]
    features = unet(g, 4, 1.5, MAX_STRIDE, unet_cfg["output_stride"], interpolate)
    for name, channels, stride, act in HEADS[key][1]:
        g.conv(name, features[stride], channels, k=1, act=act)
    if key == "multi_class_topdown":
        x = g.add(
            KLayer("pre_classification_global_pool", "GlobalMaxPooling2D", [features[MAX_STRIDE]]),
            g.width[features[MAX_STRIDE]],
        )
        x = g.add(KLayer("pre_classification_flatten", "Flatten", [x]), g.width[x])
        for i in range(2):
            x = g.relu(f"pre_classification{i}_relu", g.dense(f"pre_classification{i}_fc", x, 8))
        g.dense("ClassVectorsHead", x, 2, act="softmax")
    return g.layers


def write_legacy_dir(
    path: Path, raw: dict[str, Any], layers: list[KLayer], graph: bool = True
) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "training_config.json").write_text(json.dumps(raw, indent=2))
    write_h5(path / "best_model.h5", layers, graph=graph)
    return path


def _ours(network: torch.nn.Module, image: np.ndarray) -> dict[str, np.ndarray]:
    x = torch.from_numpy(image.transpose(2, 0, 1)[None].copy())
    with torch.no_grad():
        out = network(x)
    return {
        k: v[0].numpy().transpose(1, 2, 0) if v.ndim == 4 else v[0].numpy() for k, v in out.items()
    }


def _keras_outputs(layers: list[KLayer], image: np.ndarray) -> dict[str, np.ndarray]:
    acts = keras_forward(layers, image)
    return {la.name.removesuffix("_0"): acts[la.name] for la in layers if "Head" in la.name}


# ------------------------------------------------------------------ part (a)
@pytest.mark.parametrize("interpolate", [False, True], ids=["transposed_conv", "bilinear"])
@pytest.mark.parametrize("key", list(HEADS))
def test_every_sleap_1x_model_type_matches_keras_maths(
    tmp_path: Path, key: str, interpolate: bool
) -> None:
    layers = legacy_layers(key, interpolate)
    model = load_model(write_legacy_dir(tmp_path / key, legacy_json(key, interpolate), layers))
    assert model.model_type == KINDS[key] and model.legacy
    image = np.random.default_rng(1).random((16, 24, 1), dtype=F32)  # not square, on purpose
    ours, keras = _ours(model.network, image), _keras_outputs(layers, image)
    keras.pop("OffsetRefinementHead", None)  # dropped, as sleap-nn drops it
    assert sorted(ours) == sorted(keras)
    for name, expected in keras.items():
        assert ours[name].shape == expected.shape, name
        np.testing.assert_allclose(ours[name], expected, atol=2e-5, rtol=0, err_msg=name)
        assert np.abs(expected).max() > 1e-2, "a test whose outputs are ~0 proves nothing"


def test_kernels_are_copied_in_torch_layout(tmp_path: Path) -> None:
    layers = legacy_layers("multi_class_topdown", interpolate=False)
    by_name = {la.name: la for la in layers}
    conv = by_name["stack0_enc0_conv1"].weights["kernel"]  # (kh, kw, in, out)
    trans = by_name["stack0_dec0_s4_to_s2_trans_conv"].weights["kernel"]  # (kh, kw, out, in)
    dense = by_name["pre_classification0_fc"].weights["kernel"]  # (in, out)
    raw = legacy_json("multi_class_topdown", False)
    net = load_model(write_legacy_dir(tmp_path / "m", raw, layers)).network
    state = net.state_dict()
    enc = "backbone.encoders.0.encoder_stack.0.blocks.stack0_enc0_conv1.weight"
    dec = "backbone.decoders.0.decoder_stack.0.blocks.stack0_dec0_s4_to_s2_trans_conv.weight"
    fc = "head_layers.1.pre_classification0_fc.weight"
    assert state[enc][3, 1, 0, 2] == conv[0, 2, 1, 3]  # torch (out, in, y, x)
    assert state[dec][5, 2, 2, 1] == trans[2, 1, 2, 5]  # torch ConvTranspose2d (in, out, y, x)
    assert state[fc][7, 4] == dense[4, 7]  # torch Linear (out, in)
    head = "head_layers.1.ClassVectorsHead.bias"
    assert torch.equal(state[head], torch.from_numpy(by_name["ClassVectorsHead"].weights["bias"]))


def test_config_is_what_the_equivalent_sleap_nn_yaml_gives(tmp_path: Path) -> None:
    """One parser of model semantics: the legacy folder yields the ModelConfig of the
    sleap-nn YAML that describes the same model."""
    layers = legacy_layers("multi_instance", interpolate=False)
    model = load_model(
        write_legacy_dir(tmp_path / "m", legacy_json("multi_instance", False), layers)
    )
    yaml_like = {
        "data_config": {
            "preprocessing": {
                "ensure_rgb": False,
                "ensure_grayscale": False,
                "scale": 0.5,
                "max_height": None,
                "max_width": None,
                "crop_size": None,
            },
            "skeletons": [
                {
                    "name": "Skeleton-7",
                    "nodes": [{"name": n} for n in PARTS],
                    "edges": [{"source": {"name": "A"}, "destination": {"name": "B"}}],
                    "symmetries": [[{"name": "A"}, {"name": "C"}]],
                }
            ],
        },
        "model_config": {
            "backbone_config": {
                "unet": {
                    "in_channels": 1,
                    "kernel_size": 3,
                    "filters": 4,
                    "filters_rate": 1.5,
                    "max_stride": 4,
                    "stem_stride": None,
                    "middle_block": True,
                    "up_interpolate": False,
                    "stacks": 1,
                    "convs_per_block": 2,
                    "output_stride": 1,
                },
                "convnext": None,
                "swint": None,
            },
            "head_configs": {
                "single_instance": None,
                "centroid": None,
                "centered_instance": None,
                "bottomup": {
                    "confmaps": {"part_names": PARTS, "sigma": 5.0, "output_stride": 1},
                    "pafs": {"edges": [["A", "B"]], "sigma": 15.0, "output_stride": 2},
                },
            },
            "total_params": sum(p.numel() for p in model.network.parameters()),
        },
    }
    assert model.config == parse_config(yaml_like)
    assert model.config.node_names == ("B", "A", "C")  # the nodes list's py/id order
    assert model.config.paf_edges == ((1, 0),) and model.config.symmetries == ((1, 2),)


def test_paths_provenance_and_the_in_channels_the_kernel_says(tmp_path: Path) -> None:
    layers = legacy_layers("single_instance", interpolate=True, in_channels=3)
    folder = write_legacy_dir(tmp_path / "m", legacy_json("single_instance", True), layers)
    for given in (folder, folder / "best_model.h5", folder / "training_config.json"):
        model = load_model(given)
        assert model.path == folder and model.config.in_channels == 3  # RGB without ensure_rgb
    assert model.config_file == folder / "training_config.json"
    assert model.weights_file == folder / "best_model.h5"
    assert not load_model(write_model_dir(tmp_path / "new", config_dict("centroid"))).legacy
    digest = hashlib.sha256((folder / "best_model.h5").read_bytes()).hexdigest()
    assert model.checkpoint_sha256 == digest
    assert model.config.total_params == sum(p.numel() for p in model.network.parameters())
    assert model.config.preprocessing.scale == 0.5
    # A grayscale frame is repeated to the network's 3 channels, as for sleap-nn models.
    out = model.network(torch.zeros(1, 1, 16, 16, dtype=torch.uint8))
    assert out["SingleInstanceConfmapsHead"].shape == (1, 3, 8, 8)


def test_weights_only_files_and_folded_batch_norm(tmp_path: Path) -> None:
    image = np.random.default_rng(2).random((16, 16, 1), dtype=F32)
    layers = legacy_layers("centroid", interpolate=False)
    model = load_model(
        write_legacy_dir(tmp_path / "plain", legacy_json("centroid", False), layers, graph=False)
    )
    np.testing.assert_allclose(
        _ours(model.network, image)["CentroidConfmapsHead"],
        _keras_outputs(layers, image)["CentroidConfmapsHead"],
        atol=2e-5,
    )
    # conv -> batch norm -> relu, the batch norm folded into the conv on load
    rng = np.random.default_rng(3)
    n = 4
    bn = KLayer(
        "stack0_enc0_bn0",
        "BatchNormalization",
        ["stack0_enc0_conv0"],
        {"axis": -1, "epsilon": 1e-3},
        {
            "gamma": rng.uniform(0.5, 2, n).astype(F32),
            "beta": rng.normal(0, 1, n).astype(F32),
            "moving_mean": rng.normal(0, 1, n).astype(F32),
            "moving_variance": rng.uniform(0.2, 3, n).astype(F32),
        },
    )
    at = next(i for i, la in enumerate(layers) if la.name == "stack0_enc0_conv0")
    layers.insert(at + 1, bn)
    layers[at + 2].inbound = [bn.name]
    model = load_model(write_legacy_dir(tmp_path / "bn", legacy_json("centroid", False), layers))
    np.testing.assert_allclose(
        _ours(model.network, image)["CentroidConfmapsHead"],
        _keras_outputs(layers, image)["CentroidConfmapsHead"],
        atol=2e-5,
    )


# ---------------------------------------------------------------- refusals
def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(raw: dict[str, Any]) -> None:
        node = raw
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def _layer(name: str, **config: Any) -> Callable[[list[KLayer]], None]:
    def edit(layers: list[KLayer]) -> None:
        next(la for la in layers if la.name == name).config.update(config)

    return edit


def _swap_concat(layers: list[KLayer]) -> None:
    concat = next(la for la in layers if la.kind == "Concatenate")
    concat.inbound.reverse()


def _add_layer(layers: list[KLayer]) -> None:
    layers.append(
        KLayer(
            "Extra_conv",
            "Conv2D",
            ["input"],
            {"strides": [1, 1], "padding": "same", "activation": "linear"},
            {"kernel": np.zeros((1, 1, 1, 1), F32), "bias": np.zeros(1, F32)},
        )
    )


def _leap_layers(layers: list[KLayer]) -> None:
    for layer in layers:  # no stack0_enc0_conv0 to read the input channels from
        layer.name = layer.name.replace("stack0_enc", "leap_down")
        layer.inbound = [name.replace("stack0_enc", "leap_down") for name in layer.inbound]


def _lambda(layers: list[KLayer]) -> None:
    layers.append(KLayer("scale_it", "Lambda", ["input"]))


def _bn_after_relu(layers: list[KLayer]) -> None:
    at = next(i for i, la in enumerate(layers) if la.name == "stack0_enc0_act0_relu")
    ones = np.ones(4, F32)
    layers.insert(
        at + 1,
        KLayer(
            "bn",
            "BatchNormalization",
            [layers[at].name],
            {},
            {"gamma": ones, "beta": ones, "moving_mean": ones, "moving_variance": ones},
        ),
    )
    layers[at + 2].inbound = ["bn"]


UNET = ("model", "backbone", "unet")
REFUSALS: dict[str, tuple[Callable[..., None] | None, Callable[..., None] | None, str]] = {
    "leap": (
        _set(("model", "backbone"), {"leap": {"max_stride": 8}, "unet": None}),
        _leap_layers,
        "backbone 'leap' is not supported (only UNet backbones can be loaded)",
    ),
    "resnet": (
        _set(("model", "backbone", "resnet"), {"version": "ResNet50"}),
        None,
        "backbone 'resnet' is not supported",
    ),
    "pretrained_encoder": (
        _set(("model", "backbone"), {"unet": None, "pretrained_encoder": {"encoder": "vgg16"}}),
        None,
        "backbone 'pretrained_encoder' is not supported",
    ),
    "hourglass": (
        _set(("model", "backbone"), {"unet": None, "hourglass": {"stacks": 3}}),
        None,
        "backbone 'hourglass' is not supported",
    ),
    "stem_stride": (
        _set((*UNET, "stem_stride"), 4),
        None,
        "unet.stem_stride 4 is not supported (UNets with stem blocks)",
    ),
    "stacks": (_set((*UNET, "stacks"), 2), None, "unet.stacks 2 is not supported"),
    "middle_block": (
        _set((*UNET, "middle_block"), False),
        None,
        "unet.middle_block false is not supported",
    ),
    "imagenet_mode": (
        _set(("data", "preprocessing", "imagenet_mode"), "tf"),
        None,
        "data.preprocessing.imagenet_mode 'tf' is not supported",
    ),
    "two_heads": (
        _set(("model", "heads", "centroid"), {"output_stride": 2}),
        None,
        "model.heads must set exactly one head type",
    ),
    "nearest": (
        None,
        _layer("stack0_dec0_s4_to_s2_interp_bilinear", interpolation="nearest"),
        "'nearest' interpolation (ours is bilinear)",
    ),
    "dilation": (None, _layer("stack0_enc0_conv0", dilation_rate=[2, 2]), "with dilation"),
    "concat_order": (None, _swap_concat, "inputs other than [skip, upsampled]"),
    "lambda": (None, _lambda, "Keras layer 'scale_it' (Lambda) is not supported"),
    "extra_layer": (None, _add_layer, "no place for (e.g. 'Extra_conv')"),
    "bn_after_relu": (None, _bn_after_relu, "(BatchNormalization) after an activation"),
    "filters": (
        _set((*UNET, "filters"), 6),
        None,
        "layer 'stack0_enc0_conv0' weight has shape (4, 1, 3, 3), "
        "training_config.json implies (6, 1, 3, 3)",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_unsupported_features_are_named_at_load(tmp_path: Path, case: str) -> None:
    edit_json, edit_layers, message = REFUSALS[case]
    raw = legacy_json("multi_instance", interpolate=True)
    layers = legacy_layers("multi_instance", interpolate=True)
    if edit_json is not None:
        edit_json(raw)
    if edit_layers is not None:
        edit_layers(layers)
    folder = write_legacy_dir(tmp_path / case, raw, layers)
    with pytest.raises(ModelError) as info:
        load_model(folder)
    text = str(info.value)
    assert text.startswith(f"{folder}: legacy SLEAP 1.x model: "), text
    assert message in text and "\n" not in text


def test_missing_crop_size_and_broken_files(tmp_path: Path) -> None:
    raw = legacy_json("centered_instance", interpolate=True)
    raw["data"]["instance_cropping"]["crop_size"] = None
    folder = write_legacy_dir(tmp_path / "crop", raw, legacy_layers("centered_instance", True))
    with pytest.raises(ModelError, match="instance_cropping.crop_size is not set"):
        load_model(folder)
    (folder / "best_model.h5").write_bytes(b"not hdf5")
    with pytest.raises(ModelError, match="best_model.h5 is not an HDF5 file"):
        load_model(folder)
    (folder / "best_model.h5").unlink()
    with pytest.raises(ModelError, match="legacy SLEAP 1.x model without best_model.h5"):
        load_model(folder)


def test_cli_refuses_before_reading_any_video(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = legacy_json("single_instance", interpolate=True)
    raw["model"]["backbone"]["leap"] = {"max_stride": 8}
    folder = write_legacy_dir(tmp_path / "leap", raw, legacy_layers("single_instance", True))
    video = tmp_path / "not_a_video.mp4"
    video.write_bytes(b"garbage that no decoder could open")
    code, err = run_cli(capsys, "predict", video, "-m", folder, "-o", tmp_path / "out.slp")
    assert code == 1
    assert f"{folder}: legacy SLEAP 1.x model: backbone 'leap' is not supported" in err
    assert "not_a_video" not in err and not (tmp_path / "out.slp").exists()


# ------------------------------------------------------------------ part (b)
LEGACY = Path(os.environ.get("SLEAP_INFER_LEGACY_MODELS", ROOT / ".legacy-models"))
PUBLIC = [
    "minimal_robot.UNet.single_instance",
    "minimal_instance.UNet.centroid",
    "minimal_instance.UNet.centered_instance",
    "minimal_instance.UNet.bottomup",
    "min_tracks_2node.UNet.bottomup_multiclass",
    "min_tracks_2node.UNet.topdown_multiclass",
]


def public_model(name: str) -> Path:
    folder = LEGACY / name
    if not (folder / "dummy_activations.h5").is_file():
        pytest.skip(f"public legacy models not found at {LEGACY} (benchmarks/legacy_models.py)")
    return folder


@pytest.mark.parametrize("name", PUBLIC)
def test_public_models_match_tensorflow_activations(name: str) -> None:
    folder = public_model(name)
    model = load_model(folder)
    with h5py.File(folder / "dummy_activations.h5", "r") as f:
        n, h, w, c = json.loads(f["metadata"][()])["input_shape"]
        with torch.no_grad():
            ours = model.network(torch.zeros(n, c, h, w))
        compared = 0
        for key in f:
            name_ = key.removesuffix("_0")
            if key == "metadata" or name_ == "OffsetRefinementHead":
                continue
            got = ours[name_].numpy()
            got = got.transpose(0, 2, 3, 1) if got.ndim == 4 else got
            assert got.shape == f[key].shape
            assert float(np.abs(got - f[key][()]).max()) <= 1e-4, key
            compared += 1
    assert compared == len(model.config.heads)


def test_public_bottomup_agrees_with_sleap_1x_own_predictions(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The model's labels_pr.val.slp holds SLEAP 1.x's own predictions on the image of
    minimal_instance.pkg.slp (it refined peaks with its offset head; we use integral)."""
    folder = public_model("minimal_instance.UNet.bottomup")
    out = tmp_path / "bu.slp"
    code, err = run_cli(
        capsys,
        "predict",
        shared / "videos" / "minimal_instance.pkg.slp",
        "-m",
        folder,
        "-o",
        out,
        "--device",
        "cpu",
        "-q",
    )
    assert code == 0, err
    ours = [i.numpy() for i in sio.load_slp(str(out)).labeled_frames[0].instances]
    sleap_1x = [
        np.array([[205.6, 188.8], [278.7, 204.4]]),
        np.array([[92.1, 202.2], [151.4, 156.8]]),
    ]
    assert len(ours) == 2
    for theirs in sleap_1x:
        assert min(float(np.abs(p - theirs).max()) for p in ours) < 1.5


@pytest.mark.parametrize("legacy_stage", ["centroid", "centered_instance"])
def test_public_legacy_model_in_a_top_down_pair_with_a_sleap_nn_one(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], legacy_stage: str
) -> None:
    models = {
        "centroid": shared / "models" / "minimal_instance_centroid",
        "centered_instance": shared / "models" / "minimal_instance_centered_instance",
    }
    models[legacy_stage] = public_model(f"minimal_instance.UNet.{legacy_stage}")
    out = tmp_path / "td.slp"
    code, err = run_cli(
        capsys,
        "predict",
        shared / "videos" / "centered_pair_small.mp4",
        "-m",
        models["centered_instance"],  # the crop model first: either order is a pair
        "-m",
        models["centroid"],
        "--frames",
        "0-2",
        "-o",
        out,
        "--device",
        "cpu",
        "-q",
    )
    assert code == 0, err
    frames = sio.load_slp(str(out)).labeled_frames
    assert [len(lf.instances) for lf in frames] == [2, 2, 2]
    truth = sio.load_slp(str(shared / "videos" / "minimal_instance.pkg.slp"))
    for gt in truth.labeled_frames[0].instances:  # frame 0 of the video
        gap = min(float(np.abs(p.numpy() - gt.numpy()).max()) for p in frames[0].instances)
        assert gap < 3.0


@pytest.mark.parametrize("dtype", [np.int64, np.complex64, np.bool_])
def test_non_float_keras_weights_are_refused_by_name(tmp_path: Path, dtype: type) -> None:
    layers = legacy_layers("single_instance", interpolate=False)
    layers[1].weights["kernel"] = (layers[1].weights["kernel"] * 10).astype(dtype)
    folder = write_legacy_dir(tmp_path / "m", legacy_json("single_instance", False), layers)
    with pytest.raises(ModelError, match=rf"weight '{layers[1].name}/kernel:0' is .*not a float"):
        load_model(folder)
