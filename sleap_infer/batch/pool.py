"""Spread a batch over several devices: one worker process per device.

Workers are spawned (never forked: CUDA does not survive a fork), each builds
its own :class:`~sleap_infer.pipeline.Pipeline` on its device, then asks the parent for one video
at a time, so a fast device simply takes more videos. Progress and outcomes
come back over the same per-worker pipe. A worker that dies (segfault, OOM
kill) costs only the video it was on, which keeps its journal and can be
resumed; the other workers carry on with the rest.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from sleap_infer.backends.threads import configure_torch_threads, cpu_budget
from sleap_infer.batch.execute import BatchEvents, JobSettings, run_task
from sleap_infer.batch.tasks import (
    FAILED,
    VideoOutcome,
    VideoTask,
    interrupted_outcome,
    kept_hint,
)
from sleap_infer.core.errors import SleapInferError
from sleap_infer.pipeline.spec import PipelineSpec

POLL_S = 0.2
STOP_GRACE_S = 30.0


class _PipeEvents:
    """:class:`BatchEvents` that reports to the parent over the worker's own pipe."""

    def __init__(self, conn: Connection, rank: int) -> None:
        self.conn = conn
        self.rank = rank

    def video_started(self, task: VideoTask, total_frames: int) -> None:
        self.conn.send(("start", self.rank, task, total_frames))

    def frames_done(self, task: VideoTask, n: int) -> None:
        self.conn.send(("frames", self.rank, task, n))

    def video_finished(self, outcome: VideoOutcome) -> None:
        self.conn.send(("finished", self.rank, outcome))


def _worker_main(
    rank: int,
    device: str,
    spec: PipelineSpec,
    settings: JobSettings,
    conn: Connection,
    threads: int | None,
) -> None:
    """Build a pipeline, then ask for videos until told to stop (``None``)."""
    signal.signal(signal.SIGINT, _stop_once)
    signal.signal(signal.SIGTERM, _stop_once)  # preemption: stop like Ctrl-C
    try:
        if threads:
            configure_torch_threads(threads)
        pipeline = spec.build(device)
        events = _PipeEvents(conn, rank)
        while True:
            conn.send(("ready", rank))
            task = conn.recv()
            if task is None:
                break
            run_task(pipeline, task, settings, events)
    except KeyboardInterrupt:
        _send_quietly(conn, ("interrupted", rank))
    except SleapInferError as exc:
        _send_quietly(conn, ("fatal", rank, f"worker on {device}: {exc}"))
    except Exception as exc:  # e.g. a backend that cannot start on this device
        _send_quietly(conn, ("fatal", rank, f"worker on {device}: {type(exc).__name__}: {exc}"))
    finally:
        # Done (or stopped): a Ctrl-C arriving now, while the interpreter shuts down, would
        # raise inside torch's exit finalizers and print their traceback; there is nothing
        # left to stop, so the rest of the exit ignores it.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        conn.close()


def _stop_once(signum: int, frame: object) -> None:
    """Ctrl-C from the terminal and the parent's forwarded one arrive together: act on
    the first, ignore the rest, so the journal closes undisturbed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _send_quietly(conn: Connection, msg: tuple[Any, ...]) -> None:
    with contextlib.suppress(OSError, KeyboardInterrupt):
        conn.send(msg)


def _cpu_threads(devices: Sequence[str]) -> int | None:
    """Each CPU worker's share of the cores this process may use (affinity, cgroup quota)."""
    n_cpu = sum(1 for d in devices if d.strip().lower() == "cpu")
    return max(1, cpu_budget() // n_cpu) if n_cpu else None


class _Pool:
    """The parent side: hands out videos one at a time, collects events, notices deaths.

    Each worker has its own pipe, and only the parent hands out work, so a worker
    killed mid-message can corrupt nothing but its own channel.
    """

    def __init__(
        self,
        devices: Sequence[str],
        spec: PipelineSpec,
        tasks: Sequence[VideoTask],
        settings: JobSettings,
        events: BatchEvents,
        on_worker_error: Callable[[str], None],
    ) -> None:
        ctx = mp.get_context("spawn")
        self.devices = list(devices)
        self.tasks = list(tasks)
        self.pending = list(reversed(self.tasks))  # pop() hands out in order
        self.events = events
        self.on_worker_error = on_worker_error
        threads = _cpu_threads(self.devices)
        self.conns: dict[int, Connection] = {}
        self.procs: dict[int, BaseProcess] = {}
        child_ends = []
        for rank, dev in enumerate(self.devices):
            parent_end, child_end = ctx.Pipe(duplex=True)
            self.conns[rank] = parent_end
            child_ends.append(child_end)
            self.procs[rank] = ctx.Process(
                target=_worker_main,
                args=(rank, dev, spec, settings, child_end, threads),
                name=f"sleap-infer-{dev}",
            )
        self._child_ends = child_ends
        self.outcomes: dict[int, VideoOutcome] = {}
        self.current: dict[int, VideoTask] = {}
        self.fatal: list[str] = []
        self.stopping = False

    def _finish(self, outcome: VideoOutcome) -> None:
        if outcome.task.index not in self.outcomes:
            self.outcomes[outcome.task.index] = outcome
            self.events.video_finished(outcome)

    def _handle(self, rank: int, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "ready":
            task = self.pending.pop() if self.pending and not self.stopping else None
            if task is not None:
                self.current[rank] = task
            try:
                self.conns[rank].send(task)
            except OSError:  # died right after asking: the video goes back in line
                if task is not None:
                    self.current.pop(rank)
                    self.pending.append(task)
                raise
        elif kind == "start":
            self.events.video_started(msg[2], msg[3])
        elif kind == "frames":
            self.events.frames_done(msg[2], msg[3])
        elif kind == "finished":
            self.current.pop(rank, None)
            self._finish(msg[2])
        elif kind == "interrupted":
            task = self.current.pop(rank, None)
            if task is not None:
                self._finish(interrupted_outcome(task))
        elif kind == "fatal":
            self.fatal.append(msg[2])
            self.on_worker_error(msg[2])

    def _closed(self, rank: int) -> None:
        """The worker's pipe closed: it exited, cleanly or not."""
        conn = self.conns.pop(rank)
        conn.close()
        proc = self.procs[rank]
        proc.join(timeout=STOP_GRACE_S)
        task = self.current.pop(rank, None)
        if task is None:
            return
        if self.stopping:
            self._finish(interrupted_outcome(task))
            return
        line = f"worker on {self.devices[rank]} died (exit code {proc.exitcode})"
        self.on_worker_error(line)
        message = f"{task.video}: {line}; {kept_hint(task)}"
        self._finish(VideoOutcome(task, FAILED, message=message))

    def _poll(self, timeout: float) -> None:
        by_conn = {conn: rank for rank, conn in self.conns.items()}
        for conn in wait(list(by_conn), timeout=timeout):
            rank = by_conn[conn]
            try:
                msg = conn.recv()
            except Exception:  # EOF, or a message cut off by the worker's death
                self._closed(rank)
                continue
            try:
                self._handle(rank, msg)
            except OSError:  # could not answer: the worker is gone
                self._closed(rank)

    def run(self) -> bool:
        """Run to the end; returns True when interrupted (Ctrl-C)."""
        for proc in self.procs.values():
            proc.start()
        for end in self._child_ends:
            end.close()  # so that a worker's death shows up as EOF here
        interrupted = False
        try:
            while self.conns:
                self._poll(POLL_S)
        except KeyboardInterrupt:
            interrupted = True
            self._stop()
        finally:
            for proc in self.procs.values():
                proc.join(timeout=STOP_GRACE_S)
                if proc.is_alive():
                    proc.terminate()
            for conn in self.conns.values():
                conn.close()
        reason = "; ".join(self.fatal) or "no worker was left to predict it"
        for task in self.tasks:
            if task.index in self.outcomes:
                continue
            if interrupted:
                self._finish(interrupted_outcome(task))
            else:
                self._finish(
                    VideoOutcome(task, FAILED, message=f"{task.video}: not predicted ({reason})")
                )
        return interrupted

    def _stop(self) -> None:
        """Ctrl-C: pass it on to workers that did not get it from the terminal, then
        collect what they report while they close their journals."""
        self.stopping = True
        for proc in self.procs.values():
            if proc.is_alive() and proc.pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(proc.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE_S
        while self.conns and time.monotonic() < deadline:
            with contextlib.suppress(KeyboardInterrupt):
                self._poll(POLL_S)


def run_on_devices(
    devices: Sequence[str],
    spec: PipelineSpec,
    tasks: Sequence[VideoTask],
    settings: JobSettings,
    events: BatchEvents,
    on_worker_error: Callable[[str], None],
) -> tuple[list[VideoOutcome], bool]:
    """Outcomes of ``tasks`` (in task order) and whether the run was interrupted."""
    pool = _Pool(devices, spec, tasks, settings, events, on_worker_error)
    interrupted = pool.run()
    return [pool.outcomes[t.index] for t in tasks], interrupted
