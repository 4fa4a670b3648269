"""Draw a prediction file over its video: a quick visual check of a new model.

Skeletons (edges as lines, nodes as dots), instance scores, translucent masks
and boxes, coloured by track, over the frames of the video the predictions
were made on; written as H.264 (:func:`render_video`) or one PNG still
(:func:`render_frame`). Plain numpy and PyAV only (:mod:`.draw` says why).
"""

from __future__ import annotations

from sleap_infer.render.encode import DEFAULT_CRF, RenderStats, render_frame, render_video

__all__ = ["DEFAULT_CRF", "RenderStats", "render_frame", "render_video"]
