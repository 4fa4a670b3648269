"""``ExportWrapper``: a network plus the decoding traced after it, for one model type."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from sleap_infer.export.settings import DecodeSettings
from sleap_infer.model.config import ModelConfig


@dataclass(frozen=True)
class OutputSpec:
    """One graph output: its name, dtype and shape (``"batch"`` marks the batch axis)."""

    name: str
    dtype: str  # numpy dtype name
    shape: tuple[int | str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}


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
    head_name: ClassVar[str]
    output_names: ClassVar[tuple[str, ...]]
    decode_fields: ClassVar[tuple[str, ...]] = ("refine", "integral_patch_size")

    def __init__(
        self, network: nn.Module, config: ModelConfig, decode: DecodeSettings, fp16: bool = False
    ) -> None:
        super().__init__()
        # A copy, so exporting in fp16 never changes the caller's float32 network.
        self.network = copy.deepcopy(network).half() if fp16 else network
        self.config = config
        self.decode = self.normalise(decode)
        self.fp16 = fp16
        stride = config.head(self.head_name).output_stride
        self.coordinate_scale = stride / config.preprocessing.scale

    @classmethod
    def normalise(cls, decode: DecodeSettings) -> DecodeSettings:
        """Reset the fields this wrapper ignores to their defaults."""
        default = DecodeSettings()
        kept = {name: getattr(decode, name) for name in cls.decode_fields}
        kept["peak_threshold"] = decode.peak_threshold
        values = {**vars(default), **kept}
        return DecodeSettings(**values)

    def confmaps(self, image: torch.Tensor) -> torch.Tensor:
        """The head's maps as float32 (decoding always runs in full precision)."""
        x = (image.float() / 255.0).half() if self.fp16 else image
        return self.network(x)[self.head_name].float()

    def output_specs(self, input_shape: tuple[int, int, int, int]) -> list[OutputSpec]:
        """Output shapes for an input of ``input_shape`` (batch left symbolic)."""
        raise NotImplementedError
