"""pyproject.toml's metadata builds with no setuptools deprecation banner."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BUILD = """
import sys, warnings
import setuptools.build_meta as backend
out = sys.argv[1]  # setuptools rewrites sys.argv while it builds
warnings.simplefilter("error")  # the table form's SetuptoolsDeprecationWarning fails here
name = backend.prepare_metadata_for_build_wheel(out)
print(open(f"{out}/{name}/METADATA").read())
"""


def test_license_is_an_spdx_string_and_the_metadata_says_so(tmp_path: Path) -> None:
    """``license = "BSD-3-Clause"`` (PEP 639): the ``{text = ...}`` table makes setuptools
    print a deprecation banner on every install, and the string needs setuptools 77."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "BSD-3-Clause"
    assert "setuptools>=77" in project["build-system"]["requires"]
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "sleap_infer").mkdir()
    (tmp_path / "sleap_infer" / "__init__.py").write_text("")
    (tmp_path / "out").mkdir()
    res = subprocess.run(
        [sys.executable, "-c", BUILD, str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "License-Expression: BSD-3-Clause" in res.stdout
