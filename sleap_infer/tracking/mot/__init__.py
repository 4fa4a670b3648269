"""sleap-nn 0.3.5's SORT family, online, on one core.

:mod:`~.core` is the track lifecycle they share (Kalman boxes, tentative and
confirmed tracks, late labels, saved state); each tracker module adds its
association, as sleap-nn's classes do over ``BaseMOTTracker``; :mod:`~.config`
holds one frozen config per tracker with sleap-nn's preset as defaults, and
:mod:`~.appearance` the re-ID memories of the four that read vectors. Imports
no other family; what it shares with them is in ``tracking/common``.
"""
