"""``--backend auto``'s choice: the measured table, what is installed, flags and lengths."""

from __future__ import annotations

import pytest

from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import BackendOptions
from sleap_infer.runtimes import choose
from sleap_infer.runtimes.choose import MARGIN_S, AutoBackend, installed_runtimes, kind_of
from sleap_infer.runtimes.speed_table import CPU_COSTS, Cost, KindCosts

ALL_CPU = ("torch", "onnx", "openvino")
NOTHING_CACHED = lambda runtime: False  # noqa: E731
ALL_CACHED = lambda runtime: True  # noqa: E731


def auto(kind: str, device: str = "cpu", installed=ALL_CPU, **flags: bool) -> AutoBackend:
    return AutoBackend.for_run(kind, device, BackendOptions(**flags), installed=installed)


@pytest.fixture()
def table(monkeypatch: pytest.MonkeyPatch) -> dict[str, KindCosts]:
    """A made-up row: openvino 10 ms/frame faster than torch, 0.5 s slower to start."""
    rows = {
        "made_up": KindCosts(
            {"torch": Cost(2.0, 30.0), "onnx": Cost(2.3, 25.0), "openvino": Cost(2.5, 20.0)},
            export_s=8.0,
        )
    }
    monkeypatch.setattr(choose, "CPU_COSTS", rows)
    return rows


def test_a_long_input_gets_the_runtime_with_the_fewest_ms_per_frame(table) -> None:
    assert auto("made_up").choose(None, NOTHING_CACHED).runtime == "openvino"
    # Without openvino installed, the next fastest; with neither, torch.
    assert (
        auto("made_up", installed=("torch", "onnx")).choose(None, NOTHING_CACHED).runtime == "onnx"
    )
    assert auto("made_up", installed=("torch",)).choose(None, NOTHING_CACHED).runtime == "torch"


def test_a_short_first_run_stays_on_torch_until_the_export_pays(table) -> None:
    pick = auto("made_up")
    # 8 s of export at 10 ms/frame saved (less 0.5 s of start-up): 850 frames to break even.
    assert pick.choose(30, NOTHING_CACHED).runtime == "torch"
    assert pick.choose(800, NOTHING_CACHED).runtime == "torch"
    assert pick.choose(900, NOTHING_CACHED).runtime == "openvino"
    # Cached: only start-up against frames, 50 frames break even (plus the noise margin).
    assert pick.choose(30, ALL_CACHED).runtime == "torch"
    frames = int((0.5 + MARGIN_S) / 0.010) + 5
    assert pick.choose(frames, ALL_CACHED).runtime == "openvino"


def test_the_reason_names_the_figures(table) -> None:
    reason = auto("made_up").choose(None, NOTHING_CACHED).reason
    assert "20 ms/frame on made_up" in reason and "torch 30" in reason
    short = auto("made_up").choose(30, NOTHING_CACHED).reason
    assert "30 frames of made_up" in short and "openvino 11.1 s" in short


def test_flags_narrow_the_candidates(table) -> None:
    assert auto("made_up", compile=True).choose(None, NOTHING_CACHED).runtime == "torch"
    int8 = auto("made_up", int8=True)
    assert int8.candidates == ("openvino", "onnx")
    assert auto("made_up", installed=("torch", "onnx"), int8=True).candidates == ("onnx",)
    assert auto("made_up", bf16=True).candidates == ("openvino", "torch")
    assert auto("made_up", fp16=True).candidates == ("torch",)
    with pytest.raises(
        UsageError, match=r"--int8 runs on them: needs openvino or onnx.*\[openvino\]"
    ):
        auto("made_up", installed=("torch",), int8=True)


def test_cuda_prefers_tensorrt_when_installed_and_mps_runs_torch() -> None:
    assert (
        auto("bottomup", "cuda", installed=(*ALL_CPU, "trt")).choose(10, ALL_CACHED).runtime
        == "trt"
    )
    assert auto("bottomup", "cuda").choose(None, NOTHING_CACHED).runtime == "torch"
    mps = auto("bottomup", "mps", installed=(*ALL_CPU, "trt"))
    assert mps.choose(None, NOTHING_CACHED).runtime == "torch"


def test_torch_only_models_and_export_folders() -> None:
    fixed = AutoBackend.for_run(
        "bottomup", "cpu", BackendOptions(), torch_only="overrides", installed=ALL_CPU
    )
    assert fixed.choose(None, NOTHING_CACHED) == choose.Choice("torch", "overrides")
    folder = AutoBackend.for_run(
        "bottomup", "cpu", BackendOptions(), export_runtimes=("openvino", "onnx"), installed=ALL_CPU
    )
    assert folder.candidates == ("openvino", "onnx")
    assert folder.choose(None, NOTHING_CACHED).runtime != "torch"


def test_an_unmeasured_kind_takes_the_preferred_installed_runtime() -> None:
    assert auto("no_such_kind").choose(None, NOTHING_CACHED).runtime == "openvino"
    assert "not measured" in auto("no_such_kind").choose(5, NOTHING_CACHED).reason


def test_every_fixture_kind_is_in_the_table_with_every_cpu_runtime() -> None:
    kinds = {
        "single_instance", "centroid", "centroid+centered_instance", "bottomup",
        "multi_class_bottomup", "centroid+multi_class_topdown", "bottomup_segmentation",
        "semantic_segmentation", "centroid+centered_instance_segmentation",
        "bottomup_segmentation/tiled", "semantic_segmentation/tiled", "single_instance/tiled",
        "bbox_centernet", "bbox_ssd", "bbox_centernet+centered_instance_segmentation",
        "centroid+embedding",
    }  # fmt: skip
    assert kinds <= set(CPU_COSTS)
    for kind in kinds:
        row = CPU_COSTS[kind]
        assert set(row.runtimes) == set(ALL_CPU) and row.export_s > 0, kind


def test_kind_names_and_installed_runtimes() -> None:
    assert kind_of(["centroid", "centered_instance"]) == "centroid+centered_instance"
    assert kind_of(["bottomup_segmentation"], tiled=True) == "bottomup_segmentation/tiled"
    here = installed_runtimes()
    assert here[0] == "torch"
    assert set(here) <= {"torch", "onnx", "openvino", "trt"}


def test_describe_says_what_a_long_and_a_short_run_get(table) -> None:
    lines = auto("made_up").describe()
    assert lines[0] == "candidates here: openvino, onnx, torch"
    assert lines[1].startswith("a long input: openvino (")
    assert lines[2].startswith("30 frames, first run: torch (")


def test_an_exported_runtime_never_counts_a_faster_start_than_torch(monkeypatch) -> None:
    """onnx measured 0.4 s quicker to start than torch (a shared machine's noise: it loads
    the same torch and checkpoint, then a session) and 1 ms/frame faster: 30 cached frames
    save 0.03 s, not 0.43, so torch."""
    row = KindCosts(
        {"torch": Cost(2.8, 3.0), "onnx": Cost(2.4, 2.0), "openvino": Cost(2.9, 2.5)}, 5.0
    )
    monkeypatch.setattr(choose, "CPU_COSTS", {"noisy": row})
    assert auto("noisy").choose(30, ALL_CACHED).runtime == "torch"
    assert auto("noisy").choose(None, NOTHING_CACHED).runtime == "onnx"


def test_runtimes_within_the_measurements_spread_count_as_equal_and_openvino_leads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenVINO 10% behind ONNX Runtime in the table is within two measurements' spread:
    OpenVINO (first in preference); 30% behind is a real difference: ONNX Runtime."""
    for behind, want in ((1.10, "openvino"), (1.30, "onnx")):
        row = KindCosts(
            {"torch": Cost(2.0, 9.0), "onnx": Cost(2.0, 4.0), "openvino": Cost(2.0, 4.0 * behind)},
            5.0,
        )
        monkeypatch.setattr(choose, "CPU_COSTS", {"close": row})
        assert auto("close").choose(None, NOTHING_CACHED).runtime == want
        assert auto("close").choose(1000, ALL_CACHED).runtime == want
