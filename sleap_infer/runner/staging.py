"""Keep a GPU fed: pinned uploads on a copy stream, postprocessing on a stream of its own.

Without this, every batch reaches the GPU through ``tensor.to(device)`` from
pageable numpy memory. CUDA then copies through a bounce buffer and the call
blocks the thread that issued it, so decoding, the upload, the network and
the postprocessing's device-to-host copies take turns on one timeline, and a
small model leaves the GPU idle most of the time.

Here the decode thread copies each batch into one of a few page-locked host
buffers and starts its upload on a side *copy stream* (``non_blocking``, a
real DMA), recording an event. The main thread makes the network's stream
wait on that event on the GPU (not on the host) and tells the caching
allocator the frames are used there (``record_stream``). Each batch's
postprocessing then runs on the finishing thread (:mod:`runner.overlap`) on a
third stream that waits for that batch's network event, so its peak finding
and device-to-host copies overlap the next batch's network.

The quirks, named: a pinned buffer may be refilled only once the upload that
read it has finished (each slot keeps its copy's event and is waited on
before reuse); tensors a side stream used must outlive that use, so the
postprocessing stream is synchronised before the finishing call returns and
drops its tensors; and pinning can fail (locked-memory limits in containers),
in which case uploads fall back to pageable memory with one warning instead
of failing the run.

The CUDA calls go through ``cuda`` (``torch.cuda`` by default), so the slot,
event and stream bookkeeping is tested on machines without a GPU.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
import torch

log = logging.getLogger(__name__)
T = TypeVar("T")

SLOTS = 3
"""Pinned buffers per batch shape: one being filled, one uploading, one spare, so the
decode thread rarely waits for an upload before it can refill a buffer."""


@dataclass
class Staged:
    """A batch's frames on the device, ``(B, C, H, W)`` uint8, and the event that says the
    upload is done (``None`` once claimed, or where nothing was uploaded asynchronously)."""

    frames: torch.Tensor
    ready: Any = None


@dataclass
class _Slot:
    buffer: torch.Tensor  # (B, H, W, C) uint8 host memory, pinned when pinning works
    copied: Any = None  # the event of the last upload that read ``buffer``


class Stager:
    """Turns decoded ``(B, H, W, C)`` numpy batches into device tensors ahead of use.

    ``stage`` runs on the decode thread, ``claim`` on the thread that runs the
    network, ``finish_on_side_stream`` wraps a layer's postprocessing for the
    finishing thread. On the CPU (``device.type == "cpu"``) staging is a zero-copy
    ``torch.from_numpy`` view and the other two are pass-throughs; that path exists
    so tests can check every layer takes staged input exactly as it takes numpy.
    """

    def __init__(self, device: torch.device, cuda: ModuleType | Any = None) -> None:
        self.device = device
        self.gpu = device.type == "cuda"
        self.cuda = cuda if cuda is not None else torch.cuda
        self.pinned = self.gpu
        self._slots: dict[tuple[int, ...], list[_Slot]] = {}
        self._turn: dict[tuple[int, ...], int] = {}
        if self.gpu:
            self.copy_stream = self.cuda.Stream(device=device)
            self.post_stream = self.cuda.Stream(device=device)

    # ------------------------------------------------------------ decode thread
    def stage(self, frames: np.ndarray) -> Staged:
        """Start the upload of ``frames``; returns before it has finished (on a GPU)."""
        if not self.gpu:
            return Staged(torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2))
        slot = self._next_slot(frames.shape)
        if slot.copied is not None:
            slot.copied.synchronize()  # the last upload from this buffer must be done
        slot.buffer.numpy()[...] = frames
        with self.cuda.device(self.device), self.cuda.stream(self.copy_stream):
            on_device = self._upload(slot.buffer)
            slot.copied = self.cuda.Event()
            slot.copied.record(self.copy_stream)
        return Staged(on_device.permute(0, 3, 1, 2), slot.copied)

    def _upload(self, buffer: torch.Tensor) -> torch.Tensor:
        return buffer.to(self.device, non_blocking=True)  # asynchronous from pinned memory

    def _next_slot(self, shape: tuple[int, ...]) -> _Slot:
        slots = self._slots.get(shape)
        if slots is None:
            if len(self._slots) >= 2:  # shapes rarely change mid-run: keep the last two
                self._slots.clear()
                self._turn.clear()
            slots = [_Slot(self._host_buffer(shape)) for _ in range(SLOTS)]
            self._slots[shape] = slots
        turn = self._turn.get(shape, 0)
        self._turn[shape] = (turn + 1) % len(slots)
        return slots[turn]

    def _host_buffer(self, shape: tuple[int, ...]) -> torch.Tensor:
        if self.pinned:
            try:
                return torch.empty(shape, dtype=torch.uint8, pin_memory=True)
            except RuntimeError as exc:  # e.g. RLIMIT_MEMLOCK in a container
                log.warning("pinned host memory unavailable (%s); uploads use pageable memory", exc)
                self.pinned = False
        return torch.empty(shape, dtype=torch.uint8)

    # ------------------------------------------------------------- network thread
    def claim(self, staged: Staged) -> torch.Tensor:
        """The frames, safe to use on this thread's current stream from now on: the stream
        waits (on the GPU) for the upload, and the allocator keeps the frames' memory
        until the work queued on that stream has used it."""
        if staged.ready is not None:
            stream = self.cuda.current_stream(self.device)
            stream.wait_event(staged.ready)
            staged.frames.record_stream(stream)
            staged.ready = None
        return staged.frames

    def finish_on_side_stream(self, finish: Callable[[], T]) -> Callable[[], T]:
        """``finish`` (a layer's postprocessing), to run on the postprocessing stream after
        the work queued so far on this thread's stream (the batch's network) is done."""
        if not self.gpu:
            return finish
        done = self.cuda.Event()
        done.record(self.cuda.current_stream(self.device))
        return functools.partial(self._finish, finish, done)

    def _finish(self, finish: Callable[[], T], done: Any) -> T:
        with self.cuda.device(self.device), self.cuda.stream(self.post_stream):
            self.post_stream.wait_event(done)
            try:
                return finish()
            finally:
                # Every tensor this stream read must stay allocated until its kernels ran;
                # they are dropped when ``finish`` is, right after this returns.
                self.post_stream.synchronize()
