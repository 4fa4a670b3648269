"""Eager (optionally compiled) PyTorch execution of a :class:`PoseNetwork`."""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import nn

from sleap_infer.backends.base import resolve_device
from sleap_infer.backends.host_memory import keep_freed_memory
from sleap_infer.backends.threads import configure_torch_threads
from sleap_infer.core.errors import BackendError, UsageError


def first_floats_per_pixel(network: nn.Module) -> float:
    """Floats of the first convolution's output per input pixel (UNet filters 32: 32; a
    ConvNeXt stem of 96 channels at stride 2: 24), 1 where the network has none."""
    for module in network.modules():
        if isinstance(module, nn.Conv2d):
            stride = module.stride[0] * module.stride[1]
            return max(module.out_channels / stride, 1e-6)
    return 1.0


class TorchBackend:
    """Runs the network under ``torch.inference_mode`` on the chosen device.

    By default the network and its input use the channels-last memory layout
    on CPU and CUDA: oneDNN and cuDNN convolutions run 2-3x faster in NHWC
    than in NCHW on these UNets, with float32 results equal to rounding.
    Opt-in options: ``fp16`` autocast on CUDA/MPS and ``bf16`` autocast on
    CPU/CUDA (outputs cast back to float32; faster, not bit-equal), ``compile``
    through ``torch.compile``. Float32 on CUDA is IEEE float32: torch lets cuDNN
    run float32 convolutions in TF32 on Ampere and newer GPUs by default, which
    moved an under-trained model's keypoints by up to 40 px from the CPU's (a
    trained one's by 0.001 px); this backend turns that off, process-wide, as
    our TensorRT engines do, so fp32 means the CPU's answers and ``fp16`` is
    the fast path. ``device`` may be already resolved (a
    ``torch.device`` from :mod:`sleap_infer.runtimes`) or a string to resolve.
    """

    does_baked_postproc = False
    cpu_chunk_floats = 2**23
    """On the CPU a batch runs in chunks whose first activation (the first convolution's
    output) holds at most this many floats (32 MiB), at least one image a call. That bounds
    the activations' memory by the network and frame, not the batch size, and costs little
    speed once freed memory is kept (:mod:`~sleap_infer.backends.host_memory`). Measured on
    the 2-vCPU development machine, batch 4, one call for the batch vs this chunk (ms/image,
    peak RSS): ConvNeXt-tiny 384 px 1,256-1,265 vs 1,261 (2 a call), 1,545-1,680 vs
    1,079-1,180 MB; UNet-32 384 px 111.4 vs 113.8 (1 a call), 698 vs 345-350 MB; crowd
    UNet-8 512 px is 4 a call anyway (24.1 ms vs 27.2 one at a time); 120 crowd crops of
    64 px run in one call (0.43 ms a crop vs 0.54 in the former 16-crop chunks)."""
    cpu_chunk_pixels = 65536
    """Input pixels a call on the CPU, set in ``__init__``: from ``cpu_chunk_floats`` where
    freed memory is kept, else this value. Where glibc's malloc hands activations back to
    the kernel on every call (the user tunes malloc, or another C library), large calls
    slowed down as their activations left the cache and were faulted in again (384 px
    frames: 38.6 ms/frame at batch 4, 25.4 at batch 1)."""

    def __init__(
        self,
        network: nn.Module,
        device: str | torch.device = "auto",
        fp16: bool = False,
        compile: bool = False,
        bf16: bool = False,
        channels_last: bool | None = None,
    ) -> None:
        self.device = device if isinstance(device, torch.device) else resolve_device(device)
        if fp16 and bf16:
            raise UsageError("--fp16 and --bf16 conflict: choose one")
        if fp16 and self.device.type not in ("cuda", "mps"):
            raise BackendError(f"--fp16 needs a cuda or mps device, not {self.device}")
        if bf16 and self.device.type not in ("cpu", "cuda"):
            raise BackendError(f"--bf16 needs a cpu or cuda device, not {self.device}")
        if self.device.type == "cpu":  # host threads matter on CPU only
            configure_torch_threads()  # sized to this process's real core budget
            if keep_freed_memory():  # activations reused, not faulted in again each call
                self.cpu_chunk_pixels = int(self.cpu_chunk_floats / first_floats_per_pixel(network))
        if self.device.type == "cuda" and not (fp16 or bf16):
            torch.backends.cudnn.allow_tf32 = False  # (cuBLAS matmuls are IEEE by default)
        self.fp16 = fp16
        self.bf16 = bf16
        if channels_last is None:
            channels_last = self.device.type in ("cpu", "cuda")
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        self.network = network.to(self.device, memory_format=self.memory_format).eval()
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

    def chunk_size(self, x: torch.Tensor) -> int:
        """Images per network call (the whole batch except on the CPU with large frames)."""
        if self.device.type != "cpu" or x.ndim != 4:
            return int(x.shape[0])
        pixels = int(x.shape[-2]) * int(x.shape[-1])
        most = max(1, min(int(x.shape[0]), self.cpu_chunk_pixels // max(1, pixels)))
        calls = -(-int(x.shape[0]) // most)
        return -(-int(x.shape[0]) // calls)  # even chunks: 4 frames at most 3 a call -> 2 + 2

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        x = x.to(self.device, non_blocking=True).contiguous(memory_format=self.memory_format)
        step = self.chunk_size(x)
        with torch.inference_mode(), self._autocast():
            if step >= x.shape[0]:
                out = self._forward(x)
            else:
                parts = [self._forward(x[i : i + step]) for i in range(0, x.shape[0], step)]
                out = {k: torch.cat([p[k] for p in parts]) for k in parts[0]}
        # Back to plain float32 NCHW: peak finding reshapes and views these maps.
        return {k: v.float().contiguous() for k, v in out.items()}

    def warmup(self, shape: tuple[int, ...]) -> None:
        """Run zeros of the real input shape so kernels, caches and compilation are ready."""
        self(torch.zeros(shape, dtype=torch.uint8, device=self.device))
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def provenance(self) -> dict[str, Any]:
        return {}  # the network is the checkpoint itself: nothing beyond name and device
