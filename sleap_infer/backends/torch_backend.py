"""Eager (optionally compiled) PyTorch execution of a :class:`PoseNetwork`."""

from __future__ import annotations

import contextlib
import itertools

import torch
from torch import nn

from sleap_infer.backends.base import resolve_device
from sleap_infer.backends.threads import configure_torch_threads
from sleap_infer.errors import BackendError


def fuse_conv_bn(module: nn.Module) -> int:
    """Fold eval-mode BatchNorm2d into the preceding Conv2d, inside ``nn.Sequential`` only.

    Restricted to Sequential containers because only there is "the next module"
    guaranteed to consume the conv's output. Returns how many pairs were fused.
    """
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    fused = 0
    for child in module.children():
        fused += fuse_conv_bn(child)
    if isinstance(module, nn.Sequential):
        names = list(module._modules)
        for a, b in itertools.pairwise(names):
            conv, bn = module._modules[a], module._modules[b]
            if (
                isinstance(conv, nn.Conv2d)
                and isinstance(bn, nn.BatchNorm2d)
                and bn.track_running_stats
            ):
                module._modules[a] = fuse_conv_bn_eval(conv.eval(), bn.eval())
                module._modules[b] = nn.Identity()
                fused += 1
    return fused


class TorchBackend:
    """Runs the network under ``torch.inference_mode`` on the chosen device.

    By default the network and its input use the channels-last memory layout
    on CPU and CUDA: oneDNN and cuDNN convolutions run 2-3x faster in NHWC
    than in NCHW on these UNets, with float32 results equal to rounding.
    Opt-in options: ``fp16`` autocast on CUDA/MPS and ``bf16`` autocast on
    CPU/CUDA (outputs cast back to float32; faster, not bit-equal), ``fuse``
    Conv+BN folding, ``compile`` through ``torch.compile``.
    """

    does_baked_postproc = False

    def __init__(
        self,
        network: nn.Module,
        device: str | torch.device = "auto",
        fp16: bool = False,
        fuse: bool = False,
        compile: bool = False,
        bf16: bool = False,
        channels_last: bool | None = None,
    ) -> None:
        self.device = resolve_device(device)
        if fp16 and bf16:
            raise BackendError("choose one of --fp16 and --bf16")
        if fp16 and self.device.type not in ("cuda", "mps"):
            raise BackendError(f"--fp16 needs a cuda or mps device, not {self.device}")
        if bf16 and self.device.type not in ("cpu", "cuda"):
            raise BackendError(f"--bf16 needs a cpu or cuda device, not {self.device}")
        # Host threads matter on CPU only; sized to this process's real core budget.
        self.threads = configure_torch_threads() if self.device.type == "cpu" else None
        self.fp16 = fp16
        self.bf16 = bf16
        if channels_last is None:
            channels_last = self.device.type in ("cpu", "cuda")
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        self.network = network.to(self.device, memory_format=self.memory_format).eval()
        self.fused = fuse_conv_bn(self.network) if fuse else 0
        self._forward = self.network
        if compile:
            if self.device.type == "mps":
                raise BackendError("torch.compile is not supported on mps")
            mode = "reduce-overhead" if self.device.type == "cuda" else None
            self._forward = torch.compile(self.network, mode=mode, dynamic=False)

    def _autocast(self) -> contextlib.AbstractContextManager[None]:
        if self.fp16:
            return torch.autocast(device_type=self.device.type, dtype=torch.float16)
        if self.bf16:
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        x = x.to(self.device, non_blocking=True).contiguous(memory_format=self.memory_format)
        with torch.inference_mode(), self._autocast():
            out = self._forward(x)
        # Back to plain float32 NCHW: peak finding reshapes and views these maps.
        return {k: v.float().contiguous() for k, v in out.items()}

    def warmup(self, shape: tuple[int, ...], iterations: int = 1) -> None:
        """Run zeros of the real input shape so kernels, caches and compilation are ready."""
        x = torch.zeros(shape, dtype=torch.uint8, device=self.device)
        for _ in range(iterations):
            self(x)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
