"""torchvision's ConvNeXt and Swin v1 building blocks, rebuilt in plain torch.

sleap-nn's ConvNeXt and Swin-T backbones are made of torchvision modules, so
their checkpoints name parameters after torchvision's attributes
(``block.0``, ``layer_scale``, ``attn.qkv``, ``attn.relative_position_index``,
``mlp.3``...). torchvision cannot be installed next to our pinned CPU torch,
so these classes reproduce the same attribute names, tensor shapes and
forward maths; ``tests/nets/test_backbones.py`` compares them with torchvision
when it is importable. Stochastic depth and dropout are inference no-ops and
are left out (their slots are kept as ``Identity`` so indices match).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Permute(nn.Module):
    """Reorder dimensions (a module so it can sit inside ``nn.Sequential``)."""

    def __init__(self, dims: tuple[int, ...]) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(*self.dims)


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.layer_norm(
            x.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps
        )
        return y.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """ConvNeXt block: depthwise 7x7 -> LayerNorm -> MLP (x4) -> scaled residual."""

    def __init__(self, dim: int, layer_scale: float = 1e-6) -> None:
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim),
            Permute((0, 2, 3, 1)),
            nn.LayerNorm(dim, eps=1e-6),
            nn.Linear(dim, 4 * dim),
            nn.GELU(),
            nn.Linear(4 * dim, dim),
            Permute((0, 3, 1, 2)),
        )
        self.layer_scale = nn.Parameter(torch.full((dim, 1, 1), layer_scale))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer_scale * self.block(x) + x


def relative_position_index(window: tuple[int, int]) -> torch.Tensor:
    """Row of the bias table for every (query token, key token) pair of a window, flattened.

    Tokens are numbered row-major; the offset ``(dy, dx)`` between two tokens
    is shifted to be non-negative and read as a row-major index into a
    ``(2*wh - 1, 2*ww - 1)`` table.
    """
    wh, ww = window
    ys, xs = torch.meshgrid(torch.arange(wh), torch.arange(ww), indexing="ij")
    ys, xs = ys.flatten(), xs.flatten()
    dy = ys[:, None] - ys[None, :] + (wh - 1)
    dx = xs[:, None] - xs[None, :] + (ww - 1)
    return (dy * (2 * ww - 1) + dx).flatten()


def _band_labels(size: int, window: int, shift: int, device: torch.device) -> torch.Tensor:
    """Which of the (up to three) bands of a rolled axis each position came from."""
    idx = torch.arange(size, device=device)
    if shift == 0:
        return torch.zeros_like(idx)
    return (idx >= size - window).long() + (idx >= size - shift).long()


def shift_attention_mask(
    height: int,
    width: int,
    window: tuple[int, int],
    shift: tuple[int, int],
    device: torch.device,
    dtype: torch.dtype,
) -> torch.Tensor:
    """``(n_windows, T, T)`` additive mask: -100 between tokens that were not neighbours
    before the cyclic shift (they wrapped around from the opposite edge), else 0."""
    wh, ww = window
    rows = _band_labels(height, wh, shift[0], device)
    cols = _band_labels(width, ww, shift[1], device)
    labels = rows[:, None] * 3 + cols[None, :]
    labels = labels.reshape(height // wh, wh, width // ww, ww).permute(0, 2, 1, 3)
    labels = labels.reshape(-1, wh * ww)
    differs = labels[:, :, None] != labels[:, None, :]
    return torch.zeros(differs.shape, dtype=dtype, device=device).masked_fill(differs, -100.0)


class ShiftedWindowAttention(nn.Module):
    """Multi-head self-attention inside (optionally cyclically shifted) windows, with a
    learned relative position bias. Input and output are ``(B, H, W, C)``."""

    def __init__(
        self, dim: int, window: tuple[int, int], shift: tuple[int, int], num_heads: int
    ) -> None:
        super().__init__()
        self.window = window
        self.shift = shift
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        n_offsets = (2 * window[0] - 1) * (2 * window[1] - 1)
        self.relative_position_bias_table = nn.Parameter(torch.zeros(n_offsets, num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
        self.register_buffer("relative_position_index", relative_position_index(window))

    def position_bias(self) -> torch.Tensor:
        tokens = self.window[0] * self.window[1]
        bias = self.relative_position_bias_table[self.relative_position_index]
        return bias.view(tokens, tokens, -1).permute(2, 0, 1).unsqueeze(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, height, width, channels = x.shape
        wh, ww = self.window
        x = F.pad(x, (0, 0, 0, (-width) % ww, 0, (-height) % wh))
        ph, pw = x.shape[1], x.shape[2]
        # A window covering the whole (padded) axis makes shifting pointless.
        sh = self.shift[0] if wh < ph else 0
        sw = self.shift[1] if ww < pw else 0
        if sh or sw:
            x = torch.roll(x, shifts=(-sh, -sw), dims=(1, 2))
        nh, nw = ph // wh, pw // ww
        tokens = wh * ww
        win = x.reshape(batch, nh, wh, nw, ww, channels).permute(0, 1, 3, 2, 4, 5)
        win = win.reshape(batch * nh * nw, tokens, channels)

        head_dim = channels // self.num_heads
        qkv = self.qkv(win).reshape(win.shape[0], tokens, 3, self.num_heads, head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attn = (q * head_dim**-0.5) @ k.transpose(-2, -1) + self.position_bias()
        if sh or sw:
            mask = shift_attention_mask(ph, pw, self.window, (sh, sw), x.device, attn.dtype)
            attn = attn.view(batch, nh * nw, self.num_heads, tokens, tokens) + mask[None, :, None]
            attn = attn.view(-1, self.num_heads, tokens, tokens)
        out = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(win.shape[0], tokens, channels)
        out = self.proj(out)

        out = out.reshape(batch, nh, nw, wh, ww, channels).permute(0, 1, 3, 2, 4, 5)
        out = out.reshape(batch, ph, pw, channels)
        if sh or sw:
            out = torch.roll(out, shifts=(sh, sw), dims=(1, 2))
        return out[:, :height, :width].contiguous()


class SwinTransformerBlock(nn.Module):
    """Pre-norm window attention and MLP, each with a residual. ``(B, H, W, C)`` in and out."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        window: tuple[int, int],
        shift: tuple[int, int],
        mlp_ratio: float = 4.0,
    ) -> None:
        super().__init__()
        hidden = int(dim * mlp_ratio)
        self.norm1 = nn.LayerNorm(dim)
        self.attn = ShiftedWindowAttention(dim, window, shift, num_heads)
        self.norm2 = nn.LayerNorm(dim)
        # Identity slots stand in for torchvision's dropouts so the keys are mlp.0 / mlp.3.
        self.mlp = nn.Sequential(
            nn.Linear(dim, hidden), nn.GELU(), nn.Identity(), nn.Linear(hidden, dim), nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    """Halve H and W by stacking each 2x2 neighbourhood into channels (4C), norm, project to 2C."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = nn.LayerNorm(4 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        height, width = x.shape[-3], x.shape[-2]
        x = F.pad(x, (0, 0, 0, width % 2, 0, height % 2))
        # Order matters for the weights: (even row, even col), (odd, even), (even, odd), (odd, odd).
        parts = [x[..., r::2, c::2, :] for c in (0, 1) for r in (0, 1)]
        return self.reduction(self.norm(torch.cat(parts, dim=-1)))
