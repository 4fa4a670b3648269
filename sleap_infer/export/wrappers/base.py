"""``ExportWrapper``: a network plus the decoding traced after it, for one model type."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from sleap_infer.core.config import ModelConfig
from sleap_infer.core.options import DecodeSettings


@dataclass(frozen=True)
class OutputSpec:
    """One graph output: its name, dtype and shape (``"batch"`` marks the batch axis)."""

    name: str
    dtype: str  # numpy dtype name
    shape: tuple[int | str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}


class PlainSigmoid(nn.Module):
    """``1 / (1 + exp(-x))``, written out, in place of ``nn.Sigmoid`` in exported graphs.

    ONNX Runtime's Sigmoid kernel is a fast approximation: 0 below about -18
    (torch: below -88) and off by 2x near -17. Class maps far from an animal
    sit in that range, and identity assignment compares them (ties and
    ``matched == best`` tests), so the graph must give torch's values; Exp,
    Add and Reciprocal are accurate to a few ulps in every runtime.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.reciprocal(1 + torch.exp(-x))


def with_plain_sigmoids(network: nn.Module) -> nn.Module:
    """``network`` itself if it has no ``nn.Sigmoid``, else a copy using :class:`PlainSigmoid`."""
    if not any(isinstance(m, nn.Sigmoid) for m in network.modules()):
        return network
    network = copy.deepcopy(network)
    for module in list(network.modules()):
        for name, child in module.named_children():
            if isinstance(child, nn.Sigmoid):
                setattr(module, name, PlainSigmoid())
    return network


class ExportWrapper(nn.Module):
    """uint8 ``(B, C, H, W)`` in; decoded peaks out, as a tuple in ``output_names`` order.

    The network divides by 255 itself (see ``PoseNetwork``), so normalisation
    is in the graph. Subclasses add the model type's peak finding and scale
    coordinates by ``output_stride / input_scale``, so outputs are in
    size-matched frame pixels and the host only undoes the size matcher.

    ``decode_fields`` names the :class:`DecodeSettings` fields the wrapper
    bakes in; the others do not affect its graph, so they are normalised away
    before comparing exports or building cache keys.
    """

    model_type: ClassVar[str]
    output_names: ClassVar[tuple[str, ...]]
    decode_fields: ClassVar[tuple[str, ...]] = ("refine", "integral_patch_size", "refine_guard")
    slot_values: ClassVar[tuple[str, ...]] = ()
    """Outputs whose last axis holds top-K slot values: two runtimes may break a near-tie at
    the K-th place differently, which shifts the raster-ordered slots, so they are
    verified sorted."""
    raw_maps: ClassVar[bool] = False
    """True for graphs returning the heads' raw maps (the host decodes them)."""

    def __init__(
        self, network: nn.Module, config: ModelConfig, decode: DecodeSettings, fp16: bool = False
    ) -> None:
        super().__init__()
        network = with_plain_sigmoids(network)
        # A copy, so exporting in fp16 never changes the caller's float32 network.
        self.network = copy.deepcopy(network).half() if fp16 else network
        self.config = config
        self.decode = self.normalise(decode)
        self.fp16 = fp16

    @property
    def confmap_name(self) -> str:
        return self.config.confmap_head.name

    @property
    def coordinate_scale(self) -> float:
        """Confmap grid -> size-matched frame pixels (``output_stride / input_scale``)."""
        return self.config.confmap_head.output_stride / self.config.preprocessing.scale

    @classmethod
    def normalise(cls, decode: DecodeSettings) -> DecodeSettings:
        """Reset the fields this wrapper ignores to their defaults."""
        default = DecodeSettings()
        kept = {name: getattr(decode, name) for name in cls.decode_fields}
        kept["peak_threshold"] = decode.peak_threshold
        values = {**vars(default), **kept}
        return DecodeSettings(**values)

    def head_outputs(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every head's output as float32 (decoding always runs in full precision)."""
        x = (image.float() / 255.0).half() if self.fp16 else image
        return {name: out.float() for name, out in self.network(x).items()}

    def confmaps(self, image: torch.Tensor) -> torch.Tensor:
        """The confidence-map head's maps as float32."""
        return self.head_outputs(image)[self.confmap_name]

    def head_for(self, section: str) -> tuple[str, int]:
        """Output name and stride of the head configured under ``section``."""
        head = self.config.head_for(section)
        return head.name, head.output_stride

    def slots(self, input_shape: tuple[int, int, int, int]) -> int:
        """Local-peak slots per channel: ``max_peaks``, or every pixel of a smaller map."""
        stride = self.config.confmap_head.output_stride
        height, width = input_shape[2] // stride, input_shape[3] // stride
        return min(self.decode.max_peaks, height * width)

    def output_specs(self, input_shape: tuple[int, int, int, int]) -> list[OutputSpec]:
        """Output shapes for an input of ``input_shape`` (batch left symbolic)."""
        raise NotImplementedError

    def checks_values(self, name: str) -> bool:
        """Whether the export is refused when torch and ONNX Runtime disagree on ``name``:
        peak values (their coordinates follow from them; flags may flip at a threshold)."""
        return name.endswith("_vals")
