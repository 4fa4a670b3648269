"""Frame preprocessing on uint8 tensors, in sleap-nn's order and with its rounding.

Everything stays uint8 until the network divides by 255: resizing a float
image and rounding back differs from resizing the uint8 image directly, and
parity with sleap-nn depends on the latter.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

# torchvision's rgb_to_grayscale weights (ITU-R 601-2 luma).
_GRAY_WEIGHTS = (0.2989, 0.587, 0.114)


def as_nchw(frames: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Numpy ``(B, H, W, C)`` / ``(H, W, C)`` frames or ``(B, C, H, W)`` tensors -> NCHW."""
    if isinstance(frames, np.ndarray):
        if frames.ndim == 3:
            frames = frames[None]
        if frames.ndim != 4:
            raise ValueError(f"expected (B, H, W, C) frames, got shape {frames.shape}")
        return torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2)
    if frames.ndim == 3:
        frames = frames[None]
    if frames.ndim != 4:
        raise ValueError(f"expected (B, C, H, W) frames, got shape {tuple(frames.shape)}")
    return frames


def coerce_channels(x: torch.Tensor, ensure_rgb: bool, ensure_grayscale: bool) -> torch.Tensor:
    """Apply the config's ``ensure_rgb`` / ``ensure_grayscale`` (rgb wins, as in sleap-nn).

    Grayscale conversion of uint8 truncates (149.7 -> 149), like torchvision.
    """
    channels = x.shape[1]
    if ensure_rgb:
        return x.repeat(1, 3, 1, 1) if channels != 3 else x
    if ensure_grayscale and channels != 1:
        r, g, b = (x[:, i : i + 1].float() for i in range(3))
        gray = r * _GRAY_WEIGHTS[0] + g * _GRAY_WEIGHTS[1] + b * _GRAY_WEIGHTS[2]
        return gray.to(x.dtype) if not torch.is_floating_point(x) else gray
    return x


def resize(x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Bilinear, antialiased resize that keeps the dtype (torchvision ``resize`` semantics).

    uint8 on CPU goes through torch's native uint8 kernel (bit-identical to
    torchvision); elsewhere we resize in float and round back.
    """
    if tuple(x.shape[-2:]) == tuple(size):
        return x
    if x.dtype == torch.uint8 and x.device.type == "cpu":
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False, antialias=True)
    y = F.interpolate(x.float(), size=size, mode="bilinear", align_corners=False, antialias=True)
    if torch.is_floating_point(x):
        return y.to(x.dtype)
    return y.round_().clamp_(0, 255).to(x.dtype)


def size_match(
    x: torch.Tensor, max_height: int | None, max_width: int | None
) -> tuple[torch.Tensor, float]:
    """Aspect-preserving resize into ``(max_height, max_width)``, zero-padded bottom/right.

    Returns the image and the factor applied (1.0 when the size already matches).
    """
    height, width = x.shape[-2:]
    target_h = height if max_height is None else max_height
    target_w = width if max_width is None else max_width
    if (height, width) == (target_h, target_w):
        return x, 1.0
    h_ratio = target_h / height
    w_ratio = target_w / width
    ratio = w_ratio if h_ratio > w_ratio else h_ratio
    new_h = round(height * ratio)
    new_w = round(width * ratio)
    x = resize(x, (new_h, new_w))
    x = F.pad(x, (0, target_w - new_w, 0, target_h - new_h))
    return x, ratio


def scale_image(x: torch.Tensor, scale: float) -> torch.Tensor:
    """Resize by the config's input ``scale`` (sizes truncated, as sleap-nn does)."""
    if scale == 1.0:
        return x
    height, width = x.shape[-2:]
    return resize(x, (int(height * scale), int(width * scale)))


def pad_to_stride(x: torch.Tensor, stride: int) -> torch.Tensor:
    """Zero-pad bottom/right so height and width are multiples of ``stride``."""
    if stride <= 1:
        return x
    height, width = x.shape[-2:]
    pad_h = (stride - height % stride) % stride
    pad_w = (stride - width % stride) % stride
    if pad_h or pad_w:
        x = F.pad(x, (0, pad_w, 0, pad_h))
    return x
