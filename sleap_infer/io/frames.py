"""Parse ``--frames`` selections such as ``0-99,200,300-``."""

from __future__ import annotations

from sleap_infer.vocab.errors import UsageError


def _parts(spec: str) -> list[tuple[int, int | None]]:
    """``(lo, hi)`` inclusive ranges; ``hi`` is None for an open range ``a-``."""
    out: list[tuple[int, int | None]] = []
    for raw in spec.split(","):
        part = raw.strip()
        if not part:
            continue
        try:
            if "-" in part:
                lo_s, hi_s = part.split("-", 1)
                lo, hi = int(lo_s), (None if hi_s.strip() == "" else int(hi_s))
            else:
                lo = int(part)
                hi = lo
        except ValueError as exc:
            raise UsageError(
                f"--frames: cannot parse {part!r} (use e.g. 0-99,200 or 500-)"
            ) from exc
        if lo < 0 or (hi is not None and hi < lo):
            raise UsageError(f"--frames: bad range {part!r}")
        out.append((lo, hi))
    return out


def check_frames(spec: str | None) -> None:
    """Raise :class:`UsageError` for a malformed selection (before any video is opened)."""
    if spec is not None:
        _parts(spec)


def parse_frames(spec: str | None, n_frames: int | None = None) -> list[int] | None:
    """Sorted unique frame indices from a comma list of ``i``, ``a-b`` (inclusive) or ``a-``.

    ``None`` / empty means every frame. With ``n_frames`` known, open ranges
    end at the last frame and indices past the end are dropped.
    """
    if spec is None or not spec.strip():
        return None
    out: set[int] = set()
    for lo, hi in _parts(spec):
        if hi is None:
            if n_frames is None:
                raise UsageError(f"--frames '{lo}-': open range needs a known frame count")
            hi = n_frames - 1
        if n_frames is not None:
            hi = min(hi, n_frames - 1)
        out.update(range(lo, hi + 1))
    return sorted(out)
