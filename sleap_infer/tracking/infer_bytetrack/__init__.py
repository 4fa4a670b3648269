"""infer's own ByteTrack variant (``--tracker infer_bytetrack``), kept beside sleap-nn's.

It tracks the crowded and stop-and-go scenes better than sleap-nn's trackers
(docs/tracking-accuracy.md) and never drops a detection; the README recommends
it with ``--link-tracklets``. Imports no other family.
"""
