"""The classic tracker's config: no ``--mot_param`` knobs.

sleap-nn's classic tracker is configured by its own flags (``--features``,
``--scoring_method``, ``--candidates_method``, ... : the fields of
:class:`~sleap_infer.tracking.options.TrackingOptions`), never by
``MOTParams``; an empty config makes the registry's rule ("a ``--mot_param``
key is legal exactly when it is a field of the tracker's config") refuse every
key for it, as sleap-nn ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClassicConfig:
    """No knobs: the classic tracker reads its options, not ``--mot_param``."""
