"""The one stderr console every command prints its human-readable lines to.

stdout stays free for machine-readable output (``--progress json``), as in
sleap-nn's ``--gui`` mode, so a pipeline can parse it line by line.
"""

from __future__ import annotations

from rich.console import Console

console = Console(stderr=True)
