"""The shared options: peak options (threshold, refinement, patch size) reach every model
type, and ``--device`` says what is wrong when a device is missing."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from sleap_infer.backends import resolve_device
from sleap_infer.cli.options import check_device
from sleap_infer.core.errors import BackendError, UsageError
from sleap_infer.layers import (
    BottomUpLayer,
    BottomUpMultiClassLayer,
    CenteredInstanceLayer,
    CentroidLayer,
    InferenceLayer,
    PredictOptions,
    SingleInstanceLayer,
    TopDownLayer,
)
from sleap_infer.model.config import parse_config

from fakes import FakeBackend, gaussian_maps
from model_factory import config_dict

# Off-grid peak positions (confmap grid units, stride 2): refinement must move them.
NODES = [(6.3, 8.4), (14.6, 8.4), (22.2, 8.4)]


def _maps(n: int, centres: list[tuple[float, float]]) -> torch.Tensor:
    return gaussian_maps((32, 32), [centres] * n, sigma=1.5)


def _single(opts: PredictOptions) -> InferenceLayer:
    cfg = parse_config(config_dict("single_instance"))
    return SingleInstanceLayer(
        cfg, FakeBackend(lambda x: {"SingleInstanceConfmapsHead": _maps(len(x), NODES)}), opts
    )


def _centroid(opts: PredictOptions) -> InferenceLayer:
    cfg = parse_config(config_dict("centroid"))
    return CentroidLayer(
        cfg, FakeBackend(lambda x: {"CentroidConfmapsHead": _maps(len(x), NODES[:1])}), opts
    )


def _bottomup(opts: PredictOptions) -> InferenceLayer:
    cfg = parse_config(config_dict("bottomup"))

    def outputs(x: torch.Tensor) -> dict[str, torch.Tensor]:
        pafs = torch.zeros(len(x), 4, 16, 16)
        pafs[:, 0::2] = 1.0
        return {"MultiInstanceConfmapsHead": _maps(len(x), NODES), "PartAffinityFieldsHead": pafs}

    return BottomUpLayer(cfg, FakeBackend(outputs), opts)


def _multiclass_bottomup(opts: PredictOptions) -> InferenceLayer:
    cfg = parse_config(config_dict("multi_class_bottomup"))

    def outputs(x: torch.Tensor) -> dict[str, torch.Tensor]:
        classes = torch.tensor([0.8, 0.2]).view(1, 2, 1, 1).expand(len(x), 2, 32, 32)
        return {"MultiInstanceConfmapsHead": _maps(len(x), NODES), "ClassMapsHead": classes}

    return BottomUpMultiClassLayer(cfg, FakeBackend(outputs), opts)


def _topdown(opts: PredictOptions) -> InferenceLayer:
    c_cfg = parse_config(config_dict("centroid"))
    centroid = CentroidLayer(
        c_cfg, FakeBackend(lambda x: {"CentroidConfmapsHead": _maps(len(x), [(15.0, 15.0)])}), opts
    )
    i_cfg = parse_config(config_dict("centered_instance"))
    crop_nodes = [(x - 4, y - 2) for x, y in NODES]  # inside the 16x16 crop grid
    instance = CenteredInstanceLayer(
        i_cfg,
        FakeBackend(
            lambda x: {
                "CenteredInstanceConfmapsHead": gaussian_maps((16, 16), [crop_nodes] * len(x), 1.5)
            }
        ),
        opts,
    )
    return TopDownLayer(centroid, instance, opts)


BUILDERS: dict[str, tuple[Callable[[PredictOptions], InferenceLayer], float]] = {
    # name: (builder, offset of the stride-2 grid in output pixels)
    "single_instance": (_single, 0.0),
    "centroid": (_centroid, 0.0),
    "bottomup": (_bottomup, 0.0),
    "multi_class_bottomup": (_multiclass_bottomup, 0.0),
    "topdown": (_topdown, 0.5),  # crop top-left = centroid - 16 + 0.5
}


def _coords(layer: InferenceLayer) -> np.ndarray:
    preds = layer.predict(np.zeros((2, 64, 64, 1), np.uint8))
    assert preds.valid.any()
    pts = preds.points[preds.valid]
    return pts[~np.isnan(pts)]


def _on_grid(values: np.ndarray, offset: float) -> bool:
    return bool(np.allclose(((values - offset) / 2) % 1, 0, atol=1e-4))


@pytest.mark.parametrize("name", list(BUILDERS))
def test_refinement_options(name: str) -> None:
    build, offset = BUILDERS[name]
    refined = _coords(build(PredictOptions(peak_threshold=0.2)))
    assert not _on_grid(refined, offset)
    assert _on_grid(_coords(build(PredictOptions(peak_threshold=0.2, refine=False))), offset)
    # A 1-pixel patch has no neighbours to pull the peak: same as no refinement.
    single = _coords(build(PredictOptions(peak_threshold=0.2, integral_patch_size=1)))
    assert _on_grid(single, offset)
    wider = _coords(build(PredictOptions(peak_threshold=0.2, integral_patch_size=7)))
    assert not np.allclose(wider, refined)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_peak_threshold_above_every_peak_finds_nothing(name: str) -> None:
    build, _ = BUILDERS[name]
    preds = build(PredictOptions(peak_threshold=1.01)).predict(np.zeros((2, 64, 64, 1), np.uint8))
    assert preds.n_instances == 0


# ------------------------------------------------------------------ --device
def _cuda(monkeypatch: pytest.MonkeyPatch, build: str | None, gpus: int) -> None:
    monkeypatch.setattr(torch.version, "cuda", build)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)


def test_cuda_on_a_cpu_only_torch_build_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    _cuda(monkeypatch, None, 0)
    with pytest.raises(BackendError) as info:
        resolve_device("cuda")
    assert str(info.value) == (
        f"--device cuda: CUDA is not available: this torch build ({torch.__version__}) has no "
        "CUDA support; install a CUDA build of torch (https://pytorch.org/get-started/locally/) "
        "or use --device cpu"
    )


def test_cuda_build_without_a_visible_gpu_or_with_too_few(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _cuda(monkeypatch, "12.1", 0)
    with pytest.raises(BackendError, match=r"built for CUDA 12\.1\) sees no GPU; check nvidia-smi"):
        resolve_device("cuda:0")
    _cuda(monkeypatch, "12.1", 2)
    with pytest.raises(BackendError, match=r"--device cuda:3: only 2 CUDA device\(s\) here"):
        resolve_device("cuda:3")
    assert resolve_device("CUDA:1") == torch.device("cuda", 1)


def test_mps_not_built_or_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: False)
    with pytest.raises(BackendError, match=r"this torch build \(.*\) has no MPS support"):
        resolve_device("mps")
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(BackendError, match="MPS is not available on this machine"):
        resolve_device("mps")


def test_a_misspelt_device_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        check_device("gpu")
    assert info.value.exit_code == 2
    assert str(info.value) == "--device 'gpu': unknown device (use auto, cpu, cuda, cuda:N or mps)"
    with pytest.raises(UsageError, match="--devices 'cuda:x'"):
        check_device("cuda:x", "--devices")
    assert [check_device(d) for d in ("auto", "CPU", " cuda:12 ", "mps")]
    with pytest.raises(BackendError, match="--device 'tpu:9': unknown device"):
        resolve_device("tpu:9")  # the Python API: BackendError, as before
