"""sleap_infer: fast, robust batch pose prediction for sleap-nn models."""

import os as _os

__version__ = "0.1.0"

if _os.environ.get("SLEAP_INFER_STARTUP_TRACE"):  # see sleap_infer.vocab.startup
    from sleap_infer.vocab import startup as _startup

    _startup.mark("package")
