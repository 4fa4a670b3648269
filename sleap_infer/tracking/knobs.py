"""A tracker config's fields: default, bounds and meaning, declared once.

Every tracker's config (``classic/config.py``, ``mot/config.py``, ...) is a
frozen dataclass of :func:`knob` fields. The bounds live in the field's
metadata, so the one declaration serves three readers that used to keep their
own copies and drifted: the config's own check (:func:`check`), the
``--mot_param`` parser (a key is legal exactly when it is a field of the
tracker's config) and the tracker flags' ``--help`` (rendered from the
configs' defaults, :func:`defaults_text`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import Field
from typing import Any

from sleap_infer.core.errors import UsageError

LOW = "low"
HIGH = "high"
CHOICES = "choices"
HELP = "help"


def knob(
    default: Any,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: Sequence[str] | None = None,
) -> Any:
    """A config field: ``default`` (the preset's value), its inclusive bounds or choices,
    and one line of what it does."""
    meta = {HELP: help, LOW: low, HIGH: high, CHOICES: tuple(choices) if choices else None}
    return dataclasses.field(default=default, metadata=meta)


def unit(default: float, help: str) -> Any:
    """A similarity or score threshold: a number in [0, 1]."""
    return knob(default, help, low=0.0, high=1.0)


def fields_of(config: Any) -> tuple[Field[Any], ...]:
    """The knobs of a config class or instance."""
    return dataclasses.fields(config)


def violation(f: Field[Any], value: Any) -> str | None:
    """Why ``value`` is out of ``f``'s bounds, in sleap-nn's words; None when it is not."""
    meta = f.metadata
    if value is None:
        return None
    if meta.get(CHOICES) and value not in meta[CHOICES]:
        return f"{f.name} must be one of {list(meta[CHOICES])}, got {value!r}."
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return f"{f.name} expects a finite number, got {value!r}."
    low, high = meta.get(LOW), meta.get(HIGH)
    if low is not None and high is not None and not low <= value <= high:
        return f"{f.name} must be in [{low:g}, {high:g}], got {value!r}."
    if low is not None and value < low:
        return f"{f.name} must be >= {low:g}, got {value}."
    return None


def check(config: Any) -> None:
    """Every field of ``config`` within its bounds (a one-line :class:`UsageError`)."""
    for f in fields_of(config):
        why = violation(f, getattr(config, f.name))
        if why:
            raise UsageError(f"{type(config).__name__}: {why}")


def defaults_text(name: str, presets: dict[str, dict[str, Any]]) -> str:
    """``name``'s default per tracker, the most common first: ``"0.5; sort 0.1, botsort
    0.6"`` (trackers without the knob left out)."""
    values = {t: p[name] for t, p in presets.items() if name in p}
    if not values:
        return ""
    counts: dict[Any, int] = {}
    for v in values.values():
        counts[v] = counts.get(v, 0) + 1
    common = max(counts, key=lambda v: counts[v])
    others: dict[Any, list[str]] = {}
    for t, v in values.items():
        if v != common:
            others.setdefault(v, []).append(t)
    rest = ", ".join(f"{'/'.join(ts)} {v:g}" for v, ts in others.items())
    return f"{common:g}" + (f"; {rest}" if rest else "")
