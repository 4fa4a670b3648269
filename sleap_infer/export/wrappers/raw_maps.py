"""Network-only exports: every spatial head's map out, decoding left to the host.

Used where the decoding cannot be a fixed-shape graph or must see more than one
graph call: segmentation (connected components, per-pixel grouping to centers,
run-length encoding) and tiled models (the maps of all tiles of a frame are
stitched before anything is decoded). The host runs the model type's ordinary
layer (the one the torch backend uses) on these maps, so its decoding is the
torch path's by construction; only the network runs in ONNX Runtime / TensorRT.
"""

from __future__ import annotations

import torch
from torch import nn

from sleap_infer.core.config import ModelConfig
from sleap_infer.core.options import DecodeSettings
from sleap_infer.export.wrappers.base import ExportWrapper, OutputSpec


class RawMapsWrapper(ExportWrapper):
    """uint8 ``(B, C, H, W)`` in; one float32 ``(B, channels, H/stride, W/stride)`` output
    per spatial head, named after the head (``SegmentationHead``, ``InstanceCenterHead``...),
    exactly what :class:`~sleap_infer.backends.TorchBackend` returns for the same input.

    Sigmoid heads keep their sigmoid, written out (see :class:`PlainSigmoid`): foreground
    probabilities near a threshold decide mask pixels, so they must be torch's values.

    Embedding models export their one vector head instead, ``EmbeddingHead`` ``(B, D)``:
    the input is a batch of uint8 crops, standardised inside the network (no / 255).
    """

    decode_fields = ()  # nothing of the decoding is in the graph
    raw_maps = True

    def __init__(
        self, network: nn.Module, config: ModelConfig, decode: DecodeSettings, fp16: bool = False
    ) -> None:
        super().__init__(network, config, decode, fp16=fp16)
        # Per model, not per class: one wrapper serves every model type.
        self.model_type = config.model_type  # type: ignore[misc]
        self.embeds = config.embedding is not None
        self.output_names = tuple(  # type: ignore[misc]
            h.name for h in config.heads if h.is_spatial or self.embeds
        )

    def head_outputs(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
        """Embedding networks take the uint8 crops themselves (they standardise, not / 255)."""
        if not self.embeds:
            return super().head_outputs(image)
        return {name: out.float() for name, out in self.network(image).items()}

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, ...]:
        heads = self.head_outputs(image)
        return tuple(heads[name] for name in self.output_names)

    def output_specs(self, input_shape: tuple[int, int, int, int]) -> list[OutputSpec]:
        """Shapes read off one zero batch through the network itself, so they are the
        graph's (CUDA IO binding allocates outputs from these) whatever the backbone."""
        probe = torch.zeros((1, *input_shape[1:]), dtype=torch.uint8)
        with torch.no_grad():
            maps = self.eval()(probe)
        return [
            OutputSpec(name, "float32", ("batch", *(int(d) for d in out.shape[1:])))
            for name, out in zip(self.output_names, maps)
        ]

    def checks_values(self, name: str) -> bool:
        """Every map counts: the host thresholds and groups them pixel by pixel (and every
        vector component, for embeddings)."""
        return True
