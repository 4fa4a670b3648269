"""One track's appearance memory, and the gate that decides what may enter it.

sleap-nn 0.3.5's appearance trackers (``deepsort``, ``strongsort``,
``deepocsort``) remember each track's look as an exponential moving average
(EMA) of its unit re-ID vectors plus a bounded gallery of its most recent
*confident* ones. A vector from an ambiguous moment (two animals overlapping, a
half-hidden pose, a low score, a detection that looks about as much like a
neighbour) is kept out by :func:`passes_quality_gate`: one contaminated crop
absorbed into the EMA pulls the memory toward the wrong animal, which then wins
the next ambiguous match and absorbs more of it -- the self-reinforcing swap.

Numbers follow sleap-nn's ``tracking/mot/appearance.py`` operation for
operation (float64 unit vectors, the same normalisation and clipping), so a
cosine here is the same float as sleap-nn's and a tie breaks the same way.
A memory is three arrays (:meth:`AppearanceMemory.arrays`), which is how the
trackers journal it.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-12  # a vector (or an EMA mix) with a norm at most this counts as zero


def unit(vec: np.ndarray | None) -> np.ndarray | None:
    """``vec`` as a flat float64 unit vector, or None when missing, non-finite or zero."""
    if vec is None:
        return None
    v = np.asarray(vec, dtype=np.float64).reshape(-1)
    if v.size == 0:
        return None
    norm = float(np.linalg.norm(v))
    if not np.isfinite(norm) or norm <= EPS:
        return None
    return v / norm


def unit_rows(queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, ok)``: ``(n, D)`` float64 unit rows (zeros where unusable) and which are usable."""
    q = np.asarray(queries, dtype=np.float64)
    if q.ndim == 1:
        q = q[None, :]
    q = q.reshape(q.shape[0], -1)
    finite = np.all(np.isfinite(q), axis=1)
    q = np.where(finite[:, None], q, 0.0)
    norms = np.linalg.norm(q, axis=1)
    ok = finite & (norms > EPS)
    rows = np.zeros_like(q)
    rows[ok] = q[ok] / norms[ok, None]
    return rows, ok


class AppearanceMemory:
    """EMA plus gallery of one track's unit vectors (all of the tracker's dimension).

    ``adaptive`` is Deep OC-SORT's score-aware EMA: a detection at or below
    ``score_floor`` does not move it, a perfect one moves it by ``1 - ema_alpha``.
    """

    def __init__(
        self,
        ema_alpha: float,
        gallery_size: int,
        adaptive: bool = False,
        score_floor: float = 0.5,
    ) -> None:
        self.ema_alpha = ema_alpha
        self.gallery_size = gallery_size
        self.adaptive = adaptive
        self.score_floor = score_floor
        self.ema: np.ndarray | None = None
        self.gallery: list[np.ndarray] = []  # oldest first, at most gallery_size
        self.n_updates = 0

    @property
    def is_empty(self) -> bool:
        return self.ema is None

    def seed(self, vec: np.ndarray | None) -> None:
        """Start over from ``vec`` whatever its quality (a track needs a look to be compared)."""
        v = unit(vec)
        if v is None:
            return
        self.ema = v.copy()
        self.gallery = [v]
        self.n_updates = 1

    def update(self, vec: np.ndarray | None, score: float = 1.0, gated: bool = True) -> None:
        """Absorb a matched detection's vector; one that failed the gate changes nothing.

        An empty memory is seeded instead, gate or not (the first usable vector is
        always taken, like the spawn vector).
        """
        v = unit(vec)
        if v is None:
            return
        if self.ema is None:
            self.seed(v)
            return
        if v.size != self.ema.size or not gated:
            return
        a = self.momentum(score)
        mixed = a * self.ema + (1.0 - a) * v
        norm = float(np.linalg.norm(mixed))
        if np.isfinite(norm) and norm > EPS:  # antipodal vectors at a = 0.5 cancel: keep
            self.ema = mixed / norm
        self.gallery.append(v)
        if len(self.gallery) > self.gallery_size:
            del self.gallery[0]
        self.n_updates += 1

    def momentum(self, score: float) -> float:
        """The EMA's weight on its old value for a detection scoring ``score``."""
        alpha = float(self.ema_alpha)
        if not self.adaptive:
            return alpha
        s = float(score) if score is not None else float("nan")
        floor = float(self.score_floor)
        if not np.isfinite(s):
            trust = 0.0
        elif floor >= 1.0:
            trust = 1.0 if s >= floor else 0.0
        else:
            trust = float(np.clip((s - floor) / (1.0 - floor), 0.0, 1.0))
        return alpha + (1.0 - alpha) * (1.0 - trust)

    def gallery_max_cos(self, rows: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """DeepSORT's statistic: each unit query's best cosine over the gallery (NaN: unusable).

        ``rows``/``ok`` come from :func:`unit_rows`; an empty gallery falls back to the EMA.
        """
        out = np.full(rows.shape[0], np.nan)
        if not self.gallery:
            if self.ema is not None and rows.shape[1] == self.ema.size:
                out[ok] = np.clip(rows[ok] @ self.ema, -1.0, 1.0)
            return out
        gallery = np.stack(self.gallery, axis=0)
        if rows.shape[1] != gallery.shape[1]:
            return out
        cos = np.clip(rows @ gallery.T, -1.0, 1.0)
        out[ok] = cos[ok].max(axis=1)
        return out

    # ------------------------------------------------------------ journal
    def arrays(self, dim: int) -> tuple[np.ndarray, np.ndarray, int]:
        """``(ema (D,), gallery (G, D), n_updates)``; an empty memory's EMA is NaN."""
        ema = np.full(dim, np.nan) if self.ema is None else self.ema.copy()
        gallery = np.stack(self.gallery) if self.gallery else np.zeros((0, dim))
        return ema, gallery, self.n_updates

    def restore(self, ema: np.ndarray, gallery: np.ndarray, n_updates: int) -> None:
        """The inverse of :meth:`arrays` (bit for bit)."""
        empty = ema.size == 0 or not np.isfinite(ema).all()  # NaN, or saved before any vector
        self.ema = None if empty else np.array(ema, np.float64)
        self.gallery = [np.array(g, np.float64) for g in gallery]
        self.n_updates = int(n_updates)


def cosine_matrix(
    a: np.ndarray, ok_a: np.ndarray, b: np.ndarray | None, ok_b: np.ndarray
) -> np.ndarray:
    """``(n, m)`` cosines of unit rows; NaN where either side has no vector."""
    out = np.full((len(ok_a), len(ok_b)), np.nan)
    if out.size == 0 or b is None:
        return out
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape[1] != b.shape[1]:
        return out
    ok_a = ok_a & np.isfinite(a).all(axis=1)
    ok_b = ok_b & np.isfinite(b).all(axis=1)
    ia, ib = np.flatnonzero(ok_a), np.flatnonzero(ok_b)
    if len(ia) and len(ib):
        out[np.ix_(ia, ib)] = np.clip(a[ia] @ b[ib].T, -1.0, 1.0)
    return out


def passes_quality_gate(
    score: float,
    n_visible: int,
    n_nodes: int,
    max_iou_other: float,
    margin: float,
    *,
    high_threshold: float,
    min_margin: float | None,
    gallery_len: int,
    min_visible_fraction: float = 0.5,
    max_overlap_iou: float = 0.1,
) -> bool:
    """Whether a matched detection's vector may update its track's memory.

    All of: a confident detection (``score >= high_threshold``); at least half its
    nodes visible; overlapping no other detection or live track's prediction
    (padded-box IoU below 0.1; NaN counts as no overlap); and, once the gallery
    holds three vectors, looking more like its own track than like any other in
    reach by at least ``min_margin`` (``inf`` without a competitor, NaN fails).
    """
    if not float(score) >= float(high_threshold):
        return False
    if float(n_visible) < float(min_visible_fraction) * max(int(n_nodes), 1):
        return False
    overlap = float(max_iou_other)
    if not np.isnan(overlap) and not overlap < float(max_overlap_iou):
        return False
    young = min_margin is None or int(gallery_len) < 3  # no reliable margin yet
    return young or float(margin) >= float(min_margin)  # type: ignore[arg-type]


def frame_vectors(
    vectors: np.ndarray | None, n: int, dim: int | None
) -> tuple[np.ndarray | None, np.ndarray]:
    """A frame's usable vectors as sleap-nn's trackers read them: ``(embeddings, has)``.

    A vector is usable when present, finite and not all zero, and of ``dim``
    values (``None``: the first usable one's). Usable rows are divided by their
    float64 norm and stored as float32 (zeros elsewhere), sleap-nn's
    ``FrameDetections.embeddings``; ``embeddings`` is None when no row is usable.
    """
    has = np.zeros(n, bool)
    if vectors is None or n == 0:
        return None, has
    rows: list[np.ndarray | None] = [None] * n
    for i in range(n):
        vec = np.asarray(vectors[i], np.float64).reshape(-1)
        if vec.size == 0:
            continue
        norm = float(np.linalg.norm(vec))
        if not np.isfinite(norm) or norm <= 0.0:
            continue
        if dim is not None and vec.size != dim:
            continue
        rows[i], has[i] = vec / norm, True
        dim = vec.size if dim is None else dim
    if not has.any():
        return None, has
    assert dim is not None  # set by the first usable row
    out = np.zeros((n, int(dim)), np.float32)
    for i in np.flatnonzero(has).tolist():
        out[i] = rows[i]
    return out, has
