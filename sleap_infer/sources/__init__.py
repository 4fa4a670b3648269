"""Sources: what turns an input into numbered frames.

A video file, an image folder or glob, a SLEAP project's video, or frames
already in memory; plus which frames (``--frames``, a project's labeled ones).
"""
