"""Many videos per run: planning outputs (``tasks``), predicting each video so that
its failure never stops the others (``execute``), and spreading videos over
several devices (``pool``). Submodules are imported directly; this package
imports nothing so that ``infer --help`` stays fast."""
