"""sleap-nn's classic tracker: each new detection against the recent frames' instances.

:mod:`~.tracker` runs it online; :mod:`~.candidates` is its memory (fixed
window or local queues), :mod:`~.features` and :mod:`~.scoring` what it
compares and how, :mod:`~.matching` the assignment, :mod:`~.flow` and
:mod:`~.kalman_shift` (with :mod:`~.kalman_em`) the motion models that shift
remembered poses, and :mod:`~.state` its saved state. Imports no other family.
"""
