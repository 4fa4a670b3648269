"""``infer system`` lists only the ONNX Runtime providers that could run on this OS and
machine (issue 44 item 5): no CoreML, DirectML or ROCm on a Linux box without such a GPU."""

from __future__ import annotations

from typing import Any

import pytest

from sleap_infer.bench.runtime_checks import Probe, provider_facts


class _Ort:
    def __init__(self, present: list[str]) -> None:
        self.present = present

    def get_available_providers(self) -> list[str]:
        return self.present


def _names(present: list[str], system: str, cuda: dict[str, Any]) -> list[str]:
    ort = Probe("onnxruntime", version="1.0", handle=_Ort(present))
    return [f["name"] for f in provider_facts(ort, cuda, system)]


NO_GPU: dict[str, Any] = {"available": False, "driver": None, "reason": "no NVIDIA driver"}
NVIDIA: dict[str, Any] = {"available": True, "driver": "550.54.15", "reason": None}


@pytest.mark.parametrize(
    ("system", "cuda", "listed"),
    [
        ("Linux", NO_GPU, ["CPUExecutionProvider", "OpenVINOExecutionProvider"]),
        (
            "Linux",
            NVIDIA,
            [
                "CPUExecutionProvider",
                "CUDAExecutionProvider",
                "TensorrtExecutionProvider",
                "OpenVINOExecutionProvider",
            ],
        ),
        ("Darwin", NO_GPU, ["CPUExecutionProvider", "CoreMLExecutionProvider"]),
        (
            "Windows",
            NO_GPU,
            ["CPUExecutionProvider", "OpenVINOExecutionProvider", "DmlExecutionProvider"],
        ),
    ],
)
def test_only_providers_that_could_run_here_are_listed(
    system: str, cuda: dict[str, Any], listed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.path.exists", lambda path: False)  # no /dev/kfd: no AMD GPU
    assert _names(["CPUExecutionProvider"], system, cuda) == listed


def test_a_provider_in_the_build_is_always_listed() -> None:
    """What the installed build has is listed whatever the OS: it is a fact about it."""
    names = _names(["CPUExecutionProvider", "AzureExecutionProvider"], "Linux", NO_GPU)
    assert names[-1] == "AzureExecutionProvider"
    assert "CoreMLExecutionProvider" not in names and "ROCMExecutionProvider" not in names
