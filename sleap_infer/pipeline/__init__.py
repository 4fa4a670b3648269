"""The pipeline: models, their layer and the runner, tied together.

One video into a journal and a file (resumable), frames in memory into a
result, and a ``.slp`` re-embedded or re-tracked.
"""
