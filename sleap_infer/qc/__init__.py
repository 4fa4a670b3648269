"""Quality control of prediction files: where an output is likely wrong, and what to label next.

A predictor writes points and stops; a lab then scrolls the video to find identity
swaps, jumps and stretches the model was unsure of. This package reads a prediction
file (ours, sleap-nn's or SLEAP's ``.slp``) into dense per-track arrays
(:mod:`.records`' :class:`~.records.VideoData`), finds events in them, ranks frames to
label next, and writes the result as JSON and as a self-contained HTML page.
"""
