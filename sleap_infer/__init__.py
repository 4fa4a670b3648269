"""sleap_infer: fast, robust batch pose prediction for sleap-nn models."""

import os as _os

__version__ = "0.1.0"

if _os.environ.get("SLEAP_INFER_STARTUP_TRACE"):  # see sleap_infer.core.startup
    from sleap_infer.core import startup as _startup

    _startup.mark("package")
