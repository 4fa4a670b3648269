"""The garbage collector held off while a command's imports run, and their objects frozen.

Importing torch and the rest of ``infer predict``'s stack leaves about 290,000 objects
that the cyclic collector tracks. At CPython's default thresholds it ran three full
(generation 2) passes over them while they were being imported, 0.10 s, and a fourth in
a 300-frame run, another 0.10 s, plus some 420 younger passes (0.06 s); all that found
about 7,200 objects of cyclic garbage, the imports' own. So the ``infer`` process holds
the collector off (:func:`hold`) before a command's module is imported and, once it is,
moves every object alive into the permanent generation (``gc.freeze``) and turns the
collector back on (:func:`release`): later passes only walk objects the command makes.
With a gc callback timing the passes (a throwaway script around ``main``, 300-frame
multi-class bottom-up on OpenVINO, two runs each): the import of ``cli.predict`` took
1.19-1.23 s instead of 1.39-1.44 s, the run's collections 0.02 s instead of 0.29 s, and
the whole command 3.47-3.49 s instead of 3.80-3.97 s.

The price is the imports' cyclic garbage, never freed (7,200 objects; the process's RSS
moved by under 1 MiB when it was collected instead). Only ``main()`` of the ``infer``
process does this (no ``argv`` given): a library must not change its host process's
collector, and tests calling ``main(argv)`` keep theirs.
"""

from __future__ import annotations

import gc


def hold() -> bool:
    """Turn the collector off if it is on; whether it was (what :func:`release` needs)."""
    if not gc.isenabled():
        return False
    gc.disable()
    return True


def release(held: bool) -> None:
    """Freeze every object alive now and turn the collector back on, if :func:`hold` turned
    it off; otherwise nothing (a collector someone else turned off stays off)."""
    if held:
        gc.freeze()
        gc.enable()
