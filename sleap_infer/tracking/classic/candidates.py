"""The classic tracker's memory: the recent detections new ones are compared with.

Two ways to keep it, as in sleap-nn:

* :class:`FixedWindow`: every detection of the last ``size`` tracked frames
  (a frame with no detection counts once tracking has started). Its tracks
  are those seen in the window, listed in Python ``set`` order, the order
  sleap-nn scores and matches them in. A detection that got no track stays
  in the window with track ``None``; sleap-nn then scores the frame's first
  such detection as if ``None`` were one more track (kept here: it can
  change who matches whom). sleap-nn drops such a detection from its output;
  we keep it, untracked.
* :class:`LocalQueues`: the last ``size`` detections of every track ever
  made, ids ``0..T-1``; ``max_tracks`` caps ``T``.

A new track id is the next integer; a detection only starts one with more
than ``min_new_track_points`` visible points (masks: foreground pixels).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from sleap_infer.tracking.classic.features import Feature

Track = int | None


@dataclass
class Entry:
    """One detection as the tracker remembers it."""

    frame_idx: int
    support: int  # visible points (poses) or foreground pixels (masks)
    feature: Feature  # what is scored: pose feature, mask crop or re-ID vector
    points: np.ndarray | None = None  # (N, 2) float64 source points (poses; flow shifts them)
    track: Track = None
    score: float = float("nan")
    vector: np.ndarray | None = None  # re-ID vector an appearance blend reads (else None)


@dataclass
class Slot:
    """One frame of a :class:`FixedWindow`: its detections in output order."""

    frame_idx: int
    entries: list[Entry]


class FixedWindow:
    """Candidates = all detections of the last ``size`` frames."""

    def __init__(self, size: int, min_new_track_points: int) -> None:
        self.slots: deque[Slot] = deque(maxlen=size)
        self.min_new = min_new_track_points
        self.next_id = 0

    @property
    def empty(self) -> bool:
        return not self.slots

    def tracks(self) -> list[Track]:
        """The window's tracks in sleap-nn's (``set``) order, ``None`` included."""
        seen: set[Track] = set()
        for slot in self.slots:
            seen.update(e.track for e in slot.entries)
        return list(seen)

    def candidates(self, track: Track) -> list[Entry]:
        """Per frame, oldest first, the first detection of ``track``."""
        return self.candidates_of([track])[0]

    def candidates_of(self, tracks: list[Track]) -> list[list[Entry]]:
        """:meth:`candidates` of each of ``tracks``, in one pass over the window (a scan
        per track was 15% of the classic tracker's time at 30 animals)."""
        found: dict[Track, list[Entry]] = {t: [] for t in tracks}
        for slot in self.slots:
            seen: set[Track] = set()
            for entry in slot.entries:
                if entry.track not in seen:
                    seen.add(entry.track)
                    column = found.get(entry.track)
                    if column is not None:
                        column.append(entry)
        return [found[t] for t in tracks]

    def entries(self) -> list[Entry]:
        return [e for slot in self.slots for e in slot.entries]

    def free_ids(self) -> int | None:
        return None

    def spawn(self, slot: Slot, enqueue: bool = True) -> None:
        """New tracks for every untracked detection with enough support."""
        made = False
        for entry in slot.entries:
            if entry.track is None and entry.support > self.min_new:
                entry.track, entry.score = self.next_id, 1.0
                self.next_id += 1
                made = True
        if enqueue and made:
            self.slots.append(slot)

    def update(self, slot: Slot, pairs: list[tuple[int, int, float]]) -> None:
        """Apply matches ``(row, column, score)``, remember the frame, start new tracks."""
        columns = self.tracks()
        for row, col, score in pairs:
            slot.entries[row].track, slot.entries[row].score = columns[col], score
        self.slots.append(slot)
        if len(pairs) < len(slot.entries):
            self.spawn(slot, enqueue=False)


class LocalQueues:
    """Candidates = the last ``size`` detections of each track; tracks never expire."""

    def __init__(self, size: int, min_new_track_points: int, max_tracks: int | None) -> None:
        self.size = size
        self.min_new = min_new_track_points
        self.max_tracks = max_tracks
        self.queues: list[deque[Entry]] = []

    @property
    def empty(self) -> bool:
        return not self.queues

    @property
    def next_id(self) -> int:
        return len(self.queues)

    def tracks(self) -> list[Track]:
        return list(range(len(self.queues)))

    def candidates(self, track: Track) -> list[Entry]:
        return list(self.queues[track]) if track is not None else []

    def candidates_of(self, tracks: list[Track]) -> list[list[Entry]]:
        return [self.candidates(t) for t in tracks]

    def entries(self) -> list[Entry]:
        return [e for queue in self.queues for e in queue]

    def free_ids(self) -> int | None:
        if self.max_tracks is None:
            return None
        return max(0, self.max_tracks - len(self.queues))

    def _spawn_one(self, entry: Entry) -> None:
        if entry.support <= self.min_new:
            return
        if self.queues and self.max_tracks is not None and len(self.queues) >= self.max_tracks:
            return  # at the cap: stays untracked
        entry.track, entry.score = len(self.queues), 1.0
        self.queues.append(deque([entry], maxlen=self.size))

    def spawn(self, slot: Slot) -> None:
        for entry in slot.entries:
            self._spawn_one(entry)

    def update(self, slot: Slot, pairs: list[tuple[int, int, float]]) -> None:
        """Apply matches (the column is the track id), queue them, start new tracks."""
        for row, col, score in pairs:
            slot.entries[row].track, slot.entries[row].score = col, score
        for entry in slot.entries:
            if entry.track is not None:
                self.queues[entry.track].append(entry)
        matched = {row for row, _, _ in pairs}
        for row, entry in enumerate(slot.entries):
            if row not in matched:
                self._spawn_one(entry)
