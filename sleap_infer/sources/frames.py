"""Parse ``--frames`` selections such as ``0-99,200,300-``."""

from __future__ import annotations

from sleap_infer.core.errors import UsageError, VideoError


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
    if not out:  # '' or ',': a selection of nothing must not silently mean every frame
        raise UsageError(
            f"--frames {spec!r}: selects no frame (omit --frames for every frame, or give "
            "e.g. 0-99,200 or 500-)"
        )
    return out


def frame_ranges(spec: str) -> list[tuple[int, int | None]]:
    """``--frames`` as its inclusive ranges, in the order given (``hi`` None: to the end);
    a malformed selection is one :class:`UsageError` line."""
    return _parts(spec)


def check_frames(spec: str | None) -> None:
    """Raise :class:`UsageError` for a malformed selection (before any video is opened)."""
    if spec is not None:
        _parts(spec)


def parse_frames(spec: str | None, n_frames: int | None = None) -> list[int] | None:
    """Sorted unique frame indices from a comma list of ``i``, ``a-b`` (inclusive) or ``a-``.

    ``None`` means every frame; an empty selection is refused. With ``n_frames`` known, open ranges
    end at the last frame and indices past the end are dropped.
    """
    if spec is None:
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


def select_frames(
    spec: str | None, n_frames: int, video: object
) -> tuple[list[int] | None, str | None]:
    """``--frames`` applied to one video of ``n_frames``: the indices and a clamp warning.

    Every video of a batch has its own length, so a selection that is fine for
    one can miss another entirely. Selecting nothing is that video's error
    (raised before its journal or output is touched, so an earlier output is
    never replaced by an empty one); a selection reaching past the end is
    clamped with a warning saying how many frames were asked for and dropped.
    """
    indices = parse_frames(spec, n_frames)
    if indices is None or spec is None:
        return indices, None
    last = f"0-{n_frames - 1}" if n_frames > 0 else "none"
    if not indices:
        raise VideoError(
            f"{video}: --frames {spec} selects no frame: the video has {n_frames} frames ({last})"
        )
    past = _count_past_end(spec, n_frames)
    if not past:
        return indices, None
    return indices, (
        f"{video}: --frames {spec}: {past} selected frame{'s' if past != 1 else ''} past the "
        f"end (the video has {n_frames} frames, {last}); predicting the {len(indices)} that exist"
    )


def _count_past_end(spec: str, n_frames: int) -> int:
    """How many distinct explicitly named frames lie at or past ``n_frames`` (an open
    range ``a-`` means "to the end", so it names none past it). Ranges are merged as
    intervals: ``0-100000000`` must not build a set of a hundred million ints."""
    spans = sorted((max(lo, n_frames), hi) for lo, hi in _parts(spec) if hi is not None)
    total, reach = 0, n_frames - 1
    for lo, hi in spans:
        lo = max(lo, reach + 1)
        if hi >= lo:
            total += hi - lo + 1
            reach = hi
    return total
