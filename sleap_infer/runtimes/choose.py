"""``--backend auto``: which runtime a run uses, from what is installed and what was measured.

The default backend of ``infer predict``, ``infer track -m`` and
``sleap_infer.load``. It never changes an answer, only how fast it comes:
every candidate is an exact (float32) runtime whose keypoints equal torch's
to 1e-4 px, and reduced precision (``--fp16``, ``--bf16``, ``--int8``) stays
opt-in. What it weighs is the measured table of
:mod:`~sleap_infer.runtimes.speed_table` rather than a rule of thumb, because
the fastest runtime differs by model type (a lone centroid model, a small
single-instance network) and a first export costs seconds that a 30-frame
clip never earns back:

For a long input (or ``frames`` unknown: a pipeline loaded, not yet run) the
first installed runtime in preference order (OpenVINO, ONNX Runtime, torch) whose
ms/frame is within ``SAME_SPEED`` of the fastest's; for a run of known length, that
runtime only if it beats torch by ``MARGIN_S`` or more on

    wall(runtime) = fixed_s + frames x per_frame_ms (+ export_s when no export is cached)

so a short first run stays on torch, and an export once made (cached, or ``infer
export`` beside the model) serves short runs too. On CUDA the table has no
rows yet (no GPU was lent to measure one): TensorRT when it is installed,
torch otherwise; on MPS torch, the only runtime there.

Constraints come before costs: flags only some runtimes take (``--compile``,
``--int8``, ``--bf16``, ``--fp16``), training-config overrides (torch only:
exported graphs bake the trained scale in), a lone embedding model (it embeds
a project's detections, no frames stream) and export folders (no network for
torch) each narrow the candidates, and the reason says which did.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import BackendOptions
from sleap_infer.runtimes.speed_table import CPU_COSTS, CPU_ORDER, MEASURED_ON, KindCosts

AUTO = "auto"
MARGIN_S = 0.2
"""A run's predicted saving below this stays on torch: start-up varies by about this much
between two runs of the same command, so a smaller saving is a guess, and torch never
exports."""
SAME_SPEED = 0.15
"""ms/frame within this fraction of the fastest count as the same speed, and the
preference order (OpenVINO, ONNX Runtime, torch) decides: two measurements of the same
runtime and model on this shared machine differed by up to 25% (docs/benchmarks.md), so
a 10% lead in the table is no evidence, while OpenVINO led on every model type but one
in every earlier measurement."""
EXPORTED = ("onnx", "openvino", "trt")
_NEEDS: dict[str, tuple[str, ...]] = {
    "torch": (),
    # The exporter (torch.onnx's dynamo path) needs onnx and onnxscript; the export is
    # checked with onnxruntime, which the openvino extra installs too.
    "onnx": ("onnx", "onnxscript", "onnxruntime"),
    "openvino": ("onnx", "onnxscript", "onnxruntime", "openvino"),
    "trt": ("onnx", "onnxscript", "tensorrt"),
}


@dataclass(frozen=True)
class Choice:
    """The runtime a run uses and, in one line, why."""

    runtime: str
    reason: str


def installed_runtimes() -> tuple[str, ...]:
    """Runtimes whose packages are importable here (looked up, not imported: cheap)."""
    found = []
    for name, modules in _NEEDS.items():
        if all(importlib.util.find_spec(m) is not None for m in modules):
            found.append(name)
    return tuple(found)


def kind_of(model_types: Sequence[str], tiled: bool = False) -> str:
    """The table's key for a run: its model types in pipeline order (detector first),
    ``+``-joined, ``/tiled`` for tiled inputs (``centroid+centered_instance``)."""
    return "+".join(model_types) + ("/tiled" if tiled else "")


def _allowed(device_type: str, options: BackendOptions) -> tuple[tuple[str, ...], str]:
    """The runtimes these flags and this device allow, in preference order, and why."""
    if device_type == "cuda":
        order: tuple[str, ...] = ("trt", "torch")
    elif device_type == "mps":
        return ("torch",), "MPS runs on torch only"
    else:
        order = CPU_ORDER
    if options.compile:
        return ("torch",), "--compile is a torch option"
    if options.int8:
        return tuple(r for r in order if r in ("openvino", "onnx")), "--int8 runs on them"
    if options.bf16:
        return tuple(r for r in order if r in ("openvino", "torch")), "--bf16 runs on them"
    if options.fp16 and device_type != "cuda":
        return ("torch",), "--fp16 off CUDA runs on torch"
    return order, ""


@dataclass
class AutoBackend:
    """Chooses the runtime of each run for one set of models on one device.

    ``fixed``: a reason the choice cannot vary (overrides, an embedding model alone, a
    flag one runtime takes); then ``candidates`` holds that runtime alone.
    """

    kind: str
    device_type: str
    candidates: tuple[str, ...]
    fixed: str = ""

    @classmethod
    def for_run(
        cls,
        kind: str,
        device_type: str,
        options: BackendOptions,
        *,
        torch_only: str = "",
        export_runtimes: tuple[str, ...] = (),
        installed: tuple[str, ...] | None = None,
    ) -> AutoBackend:
        """``torch_only``: why these models run on torch whatever the table says;
        ``export_runtimes``: an export folder's runtimes (torch cannot run it)."""
        have = installed_runtimes() if installed is None else installed
        allowed, why = _allowed(device_type, options)
        if export_runtimes:
            allowed = tuple(r for r in allowed if r in export_runtimes) or export_runtimes[:1]
            why = why or "an export folder runs without torch"
        elif torch_only:
            return cls(kind, device_type, ("torch",), torch_only)
        candidates = tuple(r for r in allowed if r in have)
        if not candidates:
            wanted = " or ".join(allowed)
            extra = "openvino" if "openvino" in allowed else "onnx"
            raise UsageError(
                f"{why or 'these models'}: needs {wanted}, not installed here "
                f"(pip install 'sleap-infer[{extra}]')"
            )
        fixed = why if len(candidates) == 1 and why else ""
        return cls(kind, device_type, candidates, fixed)

    def choose(self, frames: int | None, cached: Callable[[str], bool]) -> Choice:
        """The runtime for a run of ``frames`` frames (None: not known, counted as long);
        ``cached(runtime)``: whether an export for it is there already (no export cost)."""
        if len(self.candidates) == 1:
            only = self.candidates[0]
            return Choice(only, self.fixed or f"the only runtime installed here for {self.kind}")
        if self.device_type != "cpu":
            return Choice(self.candidates[0], f"{self.candidates[0]} is installed (CUDA)")
        costs = CPU_COSTS.get(self.kind)
        if costs is None:
            first = self.candidates[0]
            return Choice(first, f"{self.kind} not measured: the fastest installed by default")
        return _cheapest(self.kind, costs, self.candidates, frames, cached)

    def describe(self) -> list[str]:
        """``infer bench``'s lines: what ``auto`` picks here for a long and a short input."""
        never = lambda _runtime: False  # noqa: E731  (the first run: nothing cached)
        lines = [f"candidates here: {', '.join(self.candidates)}"]
        for frames in (None, 30):
            choice = self.choose(frames, never)
            label = "a long input" if frames is None else f"{frames} frames, first run"
            lines.append(f"{label}: {choice.runtime} ({choice.reason})")
        return lines


def _fixed(costs: KindCosts, runtime: str) -> float:
    """A runtime's start-up, never below torch's: an exported run loads the same torch and
    checkpoint and then opens a session, so a figure under torch's is the noise of a
    shared machine, not a saving."""
    own = costs.runtimes[runtime].fixed_s
    torch = costs.runtimes.get("torch")
    return own if torch is None or runtime not in EXPORTED else max(own, torch.fixed_s)


def _long_run_pick(costs: KindCosts, measured: list[str]) -> str:
    """The runtime for a long input: the first of ``measured`` (preference order, OpenVINO
    first) whose ms/frame is within ``SAME_SPEED`` of the fastest one's, else the fastest."""
    fastest = min(costs.runtimes[r].per_frame_ms for r in measured)
    band = fastest * (1 + SAME_SPEED)  # the fastest itself is in it: next() always finds one
    return next(r for r in measured if costs.runtimes[r].per_frame_ms <= band)


def _cheapest(
    kind: str,
    costs: KindCosts,
    candidates: tuple[str, ...],
    frames: int | None,
    cached: Callable[[str], bool],
) -> Choice:
    measured = [r for r in candidates if r in costs.runtimes]
    if not measured:
        return Choice(candidates[0], f"{kind}: no measured runtime installed")
    pick = _long_run_pick(costs, measured)
    per_frame = {r: costs.runtimes[r].per_frame_ms for r in measured}
    if frames is None or pick == "torch" or "torch" not in measured:
        others = ", ".join(f"{r} {per_frame[r]:g}" for r in measured if r != pick)
        why = f"{per_frame[pick]:g} ms/frame on {kind} (against {others or 'none'})"
        return Choice(pick, f"{why}; measured {MEASURED_ON}")

    def seconds(runtime: str) -> float:
        """The run's predicted wall: start-up, frames, and a first export if one is due."""
        first_export = runtime in EXPORTED and not cached(runtime)
        export = costs.export_s if first_export else 0.0
        return _fixed(costs, runtime) + per_frame[runtime] * frames / 1000 + export

    saving = seconds("torch") - seconds(pick)
    best = pick if saving >= MARGIN_S else "torch"
    other = "torch" if best == pick else pick
    why = (
        f"{frames} frames of {kind}: about {seconds(best):.1f} s "
        f"(against {other} {seconds(other):.1f} s)"
    )
    return Choice(best, f"{why}; measured {MEASURED_ON}")
