"""What two tracker families share, so that no family imports another.

Boxes, similarities and Kalman filters on boxes (:mod:`~.boxes`,
:mod:`~.kalman`), the running body size (:mod:`~.body_size`), sleap-nn's
per-video calibration pre-pass (:mod:`~.prepare`, :mod:`~.prepare_appearance`,
:mod:`~.calibration`, :mod:`~.appearance`), per-track appearance memories
(:mod:`~.appearance_memory`) and frames stacked by detection count
(:mod:`~.frame_blocks`). Imports no family.
"""
