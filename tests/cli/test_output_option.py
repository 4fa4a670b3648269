"""``formats_for_output``: what an ``-o`` name says of the run's formats (#44.4, #45.24)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleap_infer.cli.options import formats_for_output
from sleap_infer.core.errors import UsageError


@pytest.mark.parametrize(
    ("name", "formats", "given", "expected"),
    [
        ("bu.slp", ["slp", "analysis-h5"], True, ["slp", "analysis-h5"]),
        ("bu.slp", ["analysis-h5", "slp"], True, ["slp", "analysis-h5"]),  # -o's is the main one
        ("bu.h5", ["slp,analysis-h5"], True, ["analysis-h5", "slp"]),
        ("bu.csv", ["dlc-csv"], True, ["dlc-csv"]),  # dlc-csv takes a .csv name
        ("bu.dlc.csv", ["csv", "dlc-csv"], True, ["dlc-csv", "csv"]),  # the longer ending
        ("bu.analysis.h5", ["slp"], False, ["analysis-h5"]),  # no --format: -o's
        ("bu.nwb", ["slp"], False, ["nwb"]),
        ("bu.csv", ["slp"], False, ["csv"]),
        ("bu.via.csv", ["slp"], False, ["via-csv"]),
        ("results", ["slp", "csv"], True, ["slp", "csv"]),  # a folder
        ("results.v2", ["slp"], False, ["slp"]),
    ],
)
def test_o_names_the_formats(
    tmp_path: Path, name: str, formats: list[str], given: bool, expected: list[str]
) -> None:
    assert formats_for_output(tmp_path / name, formats, given) == expected


def test_no_o_and_existing_folders_change_nothing(tmp_path: Path) -> None:
    assert formats_for_output(None, ["slp"], False) == ["slp"]
    (tmp_path / "run.slp").mkdir()  # a folder is a folder, whatever its name
    assert formats_for_output(tmp_path / "run.slp", ["csv"], True) == ["csv"]


@pytest.mark.parametrize(
    ("name", "formats", "given", "message"),
    [
        ("x.csv", ["slp"], True, "x.csv: a csv file name, but --format is slp: end it in .slp"),
        ("x.nwb", ["slp", "csv"], True, "a nwb file name, but --format is slp, csv"),
        ("x.analysis-h5", ["slp"], False, "name a --format analysis-h5 file x.analysis.h5"),
        ("x.analysis_h5", ["slp"], False, "name a --format analysis-h5 file x.analysis.h5"),
        ("x.NWB", ["slp"], True, "name a --format nwb file x.nwb"),
    ],
)
def test_conflicts_and_format_names_are_refused(
    tmp_path: Path, name: str, formats: list[str], given: bool, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        formats_for_output(tmp_path / name, formats, given)
    assert not (tmp_path / name).exists()
