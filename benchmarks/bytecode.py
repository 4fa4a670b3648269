"""Our package's bytecode compiled before a benchmark times it, as an install would have it.

An editable install has no ``.pyc`` files until an import writes them, and with
``PYTHONDONTWRITEBYTECODE`` set (as on the development VMs) no import ever does: every
timed run then compiled our ~160 modules from source again, 0.1-0.25 s of start-up
that a pip-installed wheel (compiled at install) never pays, nor sleap-nn, which pip
installed into its venv the same way. ``compileall`` writes the cache whatever that
variable says; imports read it, and fall back to the source for any file edited since.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
from pathlib import Path


def compile_package(env: dict[str, str] | None = None, cwd: Path | None = None) -> Path:
    """Compile the ``sleap_infer`` a child started with ``env`` in ``cwd`` imports; its folder."""
    where = subprocess.run(
        [sys.executable, "-c", "import sleap_infer; print(sleap_infer.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env=env if env is not None else dict(os.environ),
        cwd=cwd,
    )
    package = Path(where.stdout.strip().splitlines()[-1]).parent
    compileall.compile_dir(str(package), quiet=1)
    return package
