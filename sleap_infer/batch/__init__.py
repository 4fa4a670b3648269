"""Many videos per run: planning outputs (``tasks``), predicting each video so that
its failure never stops the others (``execute``), spreading videos over several
devices (``pool``), and the whole batch as one call (``run.run_batch``; the public
one is ``sleap_infer.predict``).
Submodules are imported directly; this package imports nothing so that
``infer --help`` stays fast."""
