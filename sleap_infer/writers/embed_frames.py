"""``--embed true``: the predicted frames' images stored in the ``.slp`` itself.

sleap-nn 0.3.5 saves its predictions with ``Labels.save(embed=True)``: every
labeled frame's image is encoded into the file (sleap-io's ``.pkg.slp`` layout),
so the predictions open and show their frames without the video, e.g. to send to
someone or to label on another machine. The streaming writer never holds the
predictions in memory, so the frames are embedded afterwards, the same way: the
written file is read back with sleap-io (which opens its video to read the
frames) and saved with ``embed=True`` beside it, then put in its place. This
holds the predictions in memory, as sleap-nn always does; a file that embeds
every frame of a long video is as large as its frames encoded as images.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import sleap_io as sio

from sleap_infer.core.errors import OutputError


def embed_frames(path: Path) -> None:
    """Rewrite the ``.slp`` at ``path`` with its labeled frames' images embedded (as
    ``sio.save_slp(embed=True)``); re-ID vectors, provenance and the rest are kept."""
    embedded = path.with_name(path.name + ".embedding.slp")
    try:
        labels = sio.load_slp(str(path))
        vectors = any(
            getattr(inst, "identity_embedding", None) is not None
            for lf in labels
            for inst in lf.instances
        )
        sio.save_slp(
            labels, str(embedded), embed=True, save_embedding_vectors=vectors, verbose=False
        )
        os.replace(embedded, path)
    except (OSError, KeyError, ValueError, RuntimeError) as exc:
        with contextlib.suppress(OSError):
            embedded.unlink()
        raise OutputError(f"{path}: cannot embed the frames' images (--embed): {exc}") from exc
