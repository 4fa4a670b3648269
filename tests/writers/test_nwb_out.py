"""NWB file identity: unique per file (DANDI), and still the animal's name for movement."""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import pytest

from sleap_infer.core.nwb_metadata import NwbMetadata

from output_cases import make_case, needs_nwb, write

pytestmark = needs_nwb


def identifier(path: Path) -> str:
    import pynwb

    with pynwb.NWBHDF5IO(str(path), "r") as io:
        return str(io.read().identifier)


def two_files(tmp_path: Path, same_video: bool, nwb: NwbMetadata | None = None) -> list[Path]:
    """Two single-animal NWB files (one track each) gathered in one folder, as a dandiset."""
    folder = tmp_path / "dandiset"
    folder.mkdir()
    files = []
    for k in range(2):
        run = tmp_path / f"run{k}"
        run.mkdir()
        name = "v.mp4" if same_video else f"v{k}.mp4"
        out = write(run, make_case("single", seed=k), "nwb", nwb=nwb, video_name=name)
        files.append(Path(shutil.copy(out, folder / f"{k}.nwb")))
    return files


@pytest.mark.parametrize("same_video", [True, False])
def test_every_file_has_its_own_identifier(tmp_path: Path, same_video: bool) -> None:
    """Before: every single-animal file was ``untracked_0``, nwbinspector's
    ``check_unique_identifiers`` CRITICAL on the folder (DANDI refuses the upload)."""
    first, second = (identifier(p) for p in two_files(tmp_path, same_video))
    assert first != second
    for one in (first, second):
        assert re.fullmatch(r"untracked_0-[0-9a-f]{12}", one)  # the animal, then unique


def test_nwbinspector_finds_the_identifiers_unique(tmp_path: Path) -> None:
    nwbinspector = pytest.importorskip("nwbinspector")
    files = two_files(tmp_path, same_video=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        messages = list(
            nwbinspector.inspect_all(
                path=str(files[0].parent), n_jobs=1, progress_bar=False, skip_validate=True
            )
        )
    found = {m.check_function_name for m in messages if m}
    assert "check_unique_identifiers" not in found
    assert found  # the inspector did look (species and age are missing)


def test_the_subject_names_the_animal(tmp_path: Path) -> None:
    """movement names the individual after the identifier: the subject id when given."""
    files = two_files(tmp_path, same_video=True, nwb=NwbMetadata(nwb_subject="mouse7"))
    names = [identifier(p) for p in files]
    assert names[0] != names[1]
    assert all(re.fullmatch(r"mouse7-[0-9a-f]{12}", n) for n in names)
    movement_io = pytest.importorskip("movement.io")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = movement_io.load_dataset(files[0], source_software="NWB")
    individuals = ds["individual" if "individual" in ds.dims else "individuals"]
    assert [str(v) for v in individuals.values] == [names[0]]


def test_several_tracks_are_named_after_the_video(tmp_path: Path) -> None:
    out = write(tmp_path, make_case("untracked"), "nwb", video_name="arena_3.mp4")
    assert re.fullmatch(r"arena_3-[0-9a-f]{12}", identifier(out))
