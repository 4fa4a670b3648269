"""Masks from poses with Segment Anything (``infer predict --mask-backend sam|sam3``).

sleap-nn 0.3.5's prompted-mask producer, re-done: :mod:`.recipe` turns each
instance's keypoints into a SAM prompt and picks among SAM's candidates,
:mod:`.models` runs SAM1 (``segment-anything``, the ``[sam]`` extra) or SAM3
(transformers, a local model folder), :mod:`.run` reads the pose ``.slp`` and
writes the masks, :mod:`.overlay` draws the review PNG. Nothing heavy is
imported until a backend is asked for.
"""
