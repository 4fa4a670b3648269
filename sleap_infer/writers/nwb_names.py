"""What NWB lets a name be, checked before the first frame rather than after the video.

NWB objects are HDF5 groups named after what they hold: a track's
``PoseEstimation``, a node's ``PoseEstimationSeries``. hdmf refuses a name
holding ``/`` (HDF5's path separator) or ``:``, HDF5 refuses an empty one, and
two series of one track cannot share a name. Found only when the file is
written, such a name would cost the whole video's predictions (kept in the
journal, but the run failed). Track names come from the run (identity classes,
tracker names) and are made to fit (``_`` for each forbidden character, a number
after a repeat); node names are the skeleton's, which readers match against the
training project, so a node NWB cannot hold is refused before predicting, in one
line (the ``check_nodes`` hook of :mod:`sleap_infer.writers.registry`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sleap_infer.core.errors import UsageError

FORBIDDEN = ("/", ":")


def nwb_name(name: str) -> str:
    """``name`` as an NWB object can be called: each ``/`` or ``:`` becomes ``_``, and an
    empty name ``_``."""
    for char in FORBIDDEN:
        name = name.replace(char, "_")
    return name or "_"


def nwb_names(names: Sequence[str]) -> list[str]:
    """:func:`nwb_name` of each, a repeat (``a/b`` and ``a_b``) numbered ``_2``, ``_3`` ..."""
    out: list[str] = []
    for name in names:
        fitted, k = nwb_name(name), 2
        while fitted in out:
            fitted, k = f"{nwb_name(name)}_{k}", k + 1
        out.append(fitted)
    return out


def check_node_names(nodes: Sequence[str]) -> None:
    """A one-line UsageError naming the first node an NWB file cannot hold."""
    seen: set[str] = set()
    for node in nodes:
        if not node:
            why = "is empty"
        elif any(char in node for char in FORBIDDEN):
            why = "holds '/' or ':'"
        elif node in seen:
            why = "is repeated"
        else:
            seen.add(node)
            continue
        raise UsageError(
            f"--format nwb: skeleton node {node!r} {why}, which an NWB series name cannot "
            "be; rename the node in the training config or use another --format"
        )
