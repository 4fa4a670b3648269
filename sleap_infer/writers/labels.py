"""Turn :class:`BatchPredictions` into sleap-io ``Labels`` (whole video in memory).

``infer predict`` never builds ``Labels``: every format is written from the
journal batch by batch (:mod:`sleap_infer.writers.outputs`). This builder is for
API users who want a ``Labels``, and is the reference the streaming ``.slp``
writer is tested against. ``make_skeleton`` and ``make_video`` serve both.
Masks become ``PredictedSegmentationMask`` (and, per ``mask_output``,
``PredictedROI``) on the frame, as sleap-nn packages them: no instance or
track link, empty masks dropped (:mod:`sleap_infer.core.polygons`). Boxes become
``PredictedBoundingBox`` on the frame, one shared ``sio.Category`` per class
name (so the file's category catalog lists each class once, not once per box).
An embedding model's re-ID vector becomes the instance's ``identity_embedding``
(float32, as sleap-nn sets it); an all-NaN vector means none, and sets nothing.
Save with ``sio.save_slp(..., save_embedding_vectors=True)`` to keep them.
Every frame given becomes a ``LabeledFrame``, one where nothing was found too
(as sleap-nn 0.3.5 packages them), unless ``empty_frames=False``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.core.config import ModelConfig
from sleap_infer.core.options import POLYGON_EPSILON
from sleap_infer.core.polygons import check_mask_output, mask_rois, packaged, sio_mask
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import embeddings_of, vector_slots
from sleap_infer.sources.video import VideoInfo
from sleap_infer.writers.slp_stream import box_category_names


def make_skeleton(config: ModelConfig) -> sio.Skeleton:
    """The skeleton the model was trained on, from its config."""
    names = list(config.node_names)
    skeleton = sio.Skeleton(
        nodes=names,
        edges=[(names[a], names[b]) for a, b in config.edges],
        name=config.skeleton_name,
    )
    if config.symmetries:
        skeleton.add_symmetries([(names[a], names[b]) for a, b in config.symmetries])
    return skeleton


def make_video(info: VideoInfo, n_frames: int | None = None) -> sio.Video:
    """A sleap-io video reference that does not reopen the file (we already know its shape).

    ``n_frames`` overrides the container's count when decoding found more frames. An
    image sequence (``info.files``) references its images, never the folder.
    """
    channels = 1 if info.grayscale else 3
    shape = [n_frames or info.n_frames, info.height, info.width, channels]
    meta: dict[str, Any] = {"shape": shape, "fps": info.fps, "grayscale": info.grayscale}
    if info.files:
        # An image sequence, stored as sleap-io stores an ImageVideo (``filenames`` is what
        # sleap-io and SLEAP read back as the frame list; ``filename`` the first image).
        files = list(info.files)
        meta.update(
            type="ImageVideo",
            filename=files[0],
            filenames=files,
            height_=info.height,
            width_=info.width,
            channels_=channels,
        )
        return sio.Video(filename=files, backend_metadata=meta, open_backend=False)
    meta.update(info.backend)  # an HDF5 input: its dataset and axis order, as sleap-io keeps them
    return sio.Video(filename=str(info.path), backend_metadata=meta, open_backend=False)


class LabelsBuilder:
    """Accumulates predicted frames for one video.

    ``mask_output``: ``"mask"`` keeps masks, ``"polygon"`` only their simplified
    polygons, ``"both"`` both (sleap-nn's ``--mask_output``). ``box_categories``:
    the box detector's class names, indexed by ``BoxSet.category``. ``empty_frames``:
    a frame where nothing was found is kept as a ``LabeledFrame`` without instances
    (sleap-nn's default); False leaves it out (its ``--no_empty_frames``).
    """

    def __init__(
        self,
        video: sio.Video,
        skeleton: sio.Skeleton,
        class_names: tuple[str, ...] = (),
        mask_output: str = "mask",
        polygon_epsilon: float = POLYGON_EPSILON,
        box_categories: tuple[str, ...] = (),
        empty_frames: bool = True,
    ) -> None:
        self.video = video
        self.empty_frames = empty_frames
        self.box_categories = tuple(box_categories)
        self._categories: dict[str, sio.Category] = {}
        self.skeleton = skeleton
        self.tracks = [sio.Track(name=name) for name in class_names]
        self.frames: list[sio.LabeledFrame] = []
        self.keep_masks, self.keep_rois = check_mask_output(mask_output)
        self.polygon_epsilon = polygon_epsilon

    def add(self, preds: BatchPredictions) -> None:
        if preds.frame_indices is None:
            raise ValueError("BatchPredictions.frame_indices must be set before writing")
        masks = packaged(preds.masks)
        rois = mask_rois(masks, self.polygon_epsilon) if self.keep_rois else []
        embeddings = embeddings_of(preds)
        has_vector = vector_slots(embeddings, preds.valid)
        for b, frame_idx in enumerate(preds.frame_indices.tolist()):
            instances = [self._instance(item) for item in preds.frame(b)]
            for j, instance in zip(np.flatnonzero(preds.valid[b]), instances):
                if has_vector[b, j]:
                    vector = np.asarray(embeddings[b, j], np.float32)
                    instance.identity_embedding = sio.Embedding(vector)
            frame_masks = (
                [sio_mask(masks, k, self.tracks) for k in masks.in_frame(b)]
                if self.keep_masks
                else []
            )
            frame_rois = [roi for k, roi in rois if masks.frame[k] == b]
            frame_boxes = self._boxes(preds, b)
            if self.empty_frames or instances or frame_masks or frame_rois or frame_boxes:
                self.frames.append(
                    sio.LabeledFrame(
                        video=self.video,
                        frame_idx=int(frame_idx),
                        instances=instances,
                        masks=frame_masks,
                        rois=frame_rois,
                        bboxes=frame_boxes,
                    )
                )

    def _boxes(self, preds: BatchPredictions, b: int) -> list[sio.PredictedBoundingBox]:
        if preds.boxes is None:
            return []
        ks = preds.boxes.in_frame(b)
        names = box_category_names(self.box_categories, preds.boxes.category[ks])
        return [
            sio.PredictedBoundingBox(
                x1=float(x1),
                y1=float(y1),
                x2=float(x2),
                y2=float(y2),
                score=float(preds.boxes.score[k]),
                category=self._category(name),
            )
            for k, name in zip(ks, names.tolist())
            for x1, y1, x2, y2 in [preds.boxes.xyxy[k]]
        ]

    def _category(self, name: str) -> sio.Category | None:
        if not name:
            return None
        return self._categories.setdefault(name, sio.Category(name=name))

    def _instance(self, item: dict[str, Any]) -> sio.PredictedInstance:
        kwargs: dict[str, Any] = {}
        class_id = item.get("class_id", -1)
        if self.tracks and 0 <= class_id < len(self.tracks):
            kwargs["track"] = self.tracks[class_id]
            if "class_score" in item:
                kwargs["tracking_score"] = float(item["class_score"])
        return sio.PredictedInstance.from_numpy(
            points_data=np.asarray(item["points"], dtype=np.float64),
            point_scores=np.asarray(item["point_scores"], dtype=np.float64),
            score=float(item["score"]),
            skeleton=self.skeleton,
            **kwargs,
        )

    def labels(self, provenance: dict[str, Any]) -> sio.Labels:
        return sio.Labels(
            labeled_frames=list(self.frames),
            videos=[self.video],
            skeletons=[self.skeleton],
            tracks=list(self.tracks),
            provenance=dict(provenance),
        )

    @property
    def n_instances(self) -> int:
        return sum(len(lf.instances) for lf in self.frames)
