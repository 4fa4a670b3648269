"""What sleap-nn's ``.slp`` saving adds after the streamed tables: embedded frame images
(``--embed true``) and ``sio.PredictedCentroid`` records (``--centroid-output``).

``--embed true``: the predicted frames' images stored in the ``.slp`` itself.

sleap-nn 0.3.5 saves its predictions with ``Labels.save(embed=True)``: every
labeled frame's image is encoded into the file (sleap-io's ``.pkg.slp`` layout),
so the predictions open and show their frames without the video, e.g. to send to
someone or to label on another machine. The streaming writer never holds the
predictions in memory, so the frames are embedded afterwards, the same way: the
written file is read back with sleap-io (which opens its video to read the
frames) and saved with ``embed=True`` beside it, then put in its place. This
holds the predictions in memory, as sleap-nn always does; a file that embeds
every frame of a long video is as large as its frames encoded as images.

``--centroid-output centroid|both``: a centroid model run alone writes its centroids
as instances on the model's skeleton (the centroid on the anchor node). sleap-nn
0.3.5 can write them as ``sio.PredictedCentroid`` (``LabeledFrame.centroids``)
instead, or as both; the file is read back with sleap-io and each instance's point
becomes a centroid with its score (the centroid's confidence), track and the
model's ``source`` tag. ``centroid`` drops the instances and, as sleap-nn, puts the
one-node ``centroid`` skeleton in place of a multi-node one.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import OutputError
from sleap_infer.writers.slots import SlpSaving


def needs_resave(saving: SlpSaving) -> bool:
    """Whether the streamed ``.slp`` must be read back and saved again by sleap-io."""
    return saving.embed or bool(saving.centroids)


def resave(path: Path, saving: SlpSaving) -> None:
    """Read the ``.slp`` at ``path``, add what ``saving`` asks (centroids, embedded frames),
    save it beside and put it in its place; a failure is one :class:`OutputError` line."""
    again = path.with_name(path.name + ".resave.slp")
    what = "embed the frames' images (--embed)" if saving.embed else "write centroids"
    try:
        labels = sio.load_slp(str(path))
        if saving.centroids:
            add_centroids(labels, saving.centroids, saving.centroid_source)
        vectors = any(
            getattr(inst, "identity_embedding", None) is not None
            for lf in labels
            for inst in lf.instances
        )
        sio.save_slp(
            labels, str(again), embed=saving.embed, save_embedding_vectors=vectors, verbose=False
        )
        os.replace(again, path)
    except (OSError, KeyError, ValueError, RuntimeError) as exc:
        with contextlib.suppress(OSError):
            again.unlink()
        raise OutputError(f"{path}: cannot {what}: {exc}") from exc


def add_centroids(labels: sio.Labels, mode: str, source: str) -> None:
    """Each instance of ``labels`` also as a ``sio.PredictedCentroid`` (``mode`` ``both``),
    or instead (``centroid``: the instances go, and a multi-node skeleton with them)."""
    for lf in labels:
        centroids = []
        for inst in lf.instances:
            found = inst.numpy()
            found = found[~np.isnan(found).any(axis=1)]
            if not len(found):
                continue
            tracking_score = getattr(inst, "tracking_score", None)
            centroids.append(
                sio.PredictedCentroid(
                    x=float(found[0, 0]),
                    y=float(found[0, 1]),
                    score=float(inst.score) if np.isfinite(inst.score) else 0.0,
                    track=inst.track,
                    tracking_score=tracking_score if inst.track is not None else None,
                    source=source,
                )
            )
        lf.centroids = centroids
        if mode == "centroid":
            lf.instances = []
    if mode == "centroid" and any(len(s.nodes) > 1 for s in labels.skeletons):
        labels.skeletons = [sio.get_centroid_skeleton()]
