"""sleap-nn 0.3.5's identity linking (``--link_tracklets``), offline, at a video's end.

:mod:`~.link` runs it over the compact arrays of :mod:`~.inputs`: swap
correction at crossings (:mod:`~.swaps`), the open-set linker
(:mod:`~.linker`) and, with ``--max-tracks``, the closed set (:mod:`~.closed`).
Its per-video calibration is shared with the MOT pre-pass (``tracking/common``).
Imports no other family.
"""
