"""Check the numbers of a ``training_config.yaml`` before anything is built from them.

sleap-nn's own configs are typed (attrs), so it fails early on ``max_stride: "four"``;
we read plain YAML, where such a value became a traceback deep in the parser (also
in ``infer info``), and ``scale: 0`` an "unexpected error" for every video. One pass
over the sections inference reads (``data_config.preprocessing`` and
``model_config``) refuses a wrong type or range in one line that names the key's
path and its value; the caller adds the file.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from sleap_infer.core.errors import ConfigError

_WHOLE = "whole"  # an integer (a float like 16.0 too)
_REAL = "real"

# key -> (kind, lowest allowed, whether the lowest itself is allowed). Keys are the last
# part of a path, looked up anywhere in the checked sections: sleap-nn uses each of these
# names with one meaning wherever it appears.
_RULES: dict[str, tuple[str, float, bool]] = {
    # preprocessing
    "scale": (_REAL, 0.0, False),
    "max_height": (_WHOLE, 1, True),
    "max_width": (_WHOLE, 1, True),
    "crop_size": (_WHOLE, 1, True),
    "crop_hw": (_WHOLE, 1, True),
    "tile_size": (_WHOLE, 1, True),
    "overlap": (_WHOLE, 0, True),
    "min_overlap_fraction": (_REAL, 0.0, True),
    "sigma_scale": (_REAL, 0.0, False),
    "tile_batch_size": (_WHOLE, 1, True),
    # backbones
    "in_channels": (_WHOLE, 1, True),
    "kernel_size": (_WHOLE, 1, True),
    "filters": (_WHOLE, 1, True),
    "filters_rate": (_REAL, 0.0, False),
    "max_stride": (_WHOLE, 1, True),
    "stacks": (_WHOLE, 1, True),
    "convs_per_block": (_WHOLE, 1, True),
    "output_stride": (_WHOLE, 1, True),
    "stem_patch_stride": (_WHOLE, 1, True),
    "stem_patch_kernel": (_WHOLE, 1, True),
    "patch_size": (_WHOLE, 1, True),
    "window_size": (_WHOLE, 1, True),
    "embed": (_WHOLE, 1, True),
    # heads
    "sigma": (_REAL, 0.0, False),
    "embedding_dim": (_WHOLE, 1, True),
    "num_fc_layers": (_WHOLE, 0, True),
    "num_fc_units": (_WHOLE, 1, True),
    "num_levels": (_WHOLE, 1, True),
    "head_channels": (_WHOLE, 1, True),
    "head_convs": (_WHOLE, 0, True),
    "anchor_sizes": (_REAL, 0.0, False),
}


def _walk(node: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """``(path, key, value)`` of every mapping entry under ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            yield where, str(key), value
            yield from _walk(value, where)


def _number(value: Any, kind: str) -> float | None:
    """``value`` as a number of ``kind``, or None when it is not one (a bool is not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if kind == _WHOLE and value != int(value):
        return None
    return float(value)


def _describe(kind: str, low: float, inclusive: bool) -> str:
    noun = "a whole number" if kind == _WHOLE else "a number"
    return f"{noun} {'>=' if inclusive else '>'} {low:g}"


def check_config_values(raw: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` at the first numeric key with a wrong type or range."""
    sections = {
        "data_config.preprocessing": (raw.get("data_config") or {}).get("preprocessing"),
        "model_config": raw.get("model_config"),
    }
    for root, section in sections.items():
        for path, key, value in _walk(section, root):
            rule = _RULES.get(key)
            if rule is None or value is None or isinstance(value, dict):
                continue
            kind, low, inclusive = rule
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if item is None:  # e.g. crop_hw: [null, null], "not set"
                    continue
                number = _number(item, kind)
                fits = number is not None and (number >= low if inclusive else number > low)
                if not fits:
                    raise ConfigError(f"{path} {item!r}: must be {_describe(kind, low, inclusive)}")
