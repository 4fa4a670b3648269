"""Input expansion (files, folders, globs, lists), sharding, and output planning."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sleap_infer.batch.tasks import plan_tasks
from sleap_infer.core.errors import UsageError
from sleap_infer.sources.inputs import expand_inputs, parse_shard, take_shard
from sleap_infer.writers.registry import FORMATS


def _touch(*paths: Path) -> None:
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    _touch(
        tmp_path / "b.mp4",
        tmp_path / "a.avi",
        tmp_path / "notes.md",
        tmp_path / ".hidden.mp4",
        tmp_path / "sub" / "c.MP4",
        tmp_path / "sub" / "deeper" / "d.mkv",
    )
    return tmp_path


def test_folder_lists_its_videos_sorted_and_recursive_goes_deeper(tree: Path) -> None:
    flat = expand_inputs([tree])
    assert [i.path.name for i in flat] == ["a.avi", "b.mp4"]
    assert all(i.root == tree and i.problem is None for i in flat)
    deep = expand_inputs([tree], recursive=True)
    assert [i.path.relative_to(tree).as_posix() for i in deep] == [
        "a.avi",
        "b.mp4",
        "sub/c.MP4",
        "sub/deeper/d.mkv",
    ]


def test_globs_lists_and_duplicates(tree: Path) -> None:
    listing = tree / "videos.txt"
    (tree / "mouse #3.mp4").write_bytes(b"x")
    listing.write_text(
        f"# my videos\nb.mp4\n\n  # indented comment\n{tree / 'sub' / 'c.MP4'}\nsub/deeper\n"
        "mouse #3.mp4\n"
    )
    got = expand_inputs([str(tree / "*.avi"), listing, tree / "b.mp4"])
    # b.mp4 appears in the list and again on the command line: predicted once. A '#' inside
    # a name is part of it; only lines starting with '#' are comments.
    assert [i.path.name for i in got] == ["a.avi", "b.mp4", "c.MP4", "d.mkv", "mouse #3.mp4"]
    assert all(i.problem is None for i in got)
    recursive_glob = expand_inputs([str(tree / "**" / "*.mkv")])
    assert [i.path.name for i in recursive_glob] == ["d.mkv"]


def test_inputs_that_name_nothing_become_problems(tree: Path) -> None:
    empty = tree / "empty"
    empty.mkdir()
    (tree / "blank.txt").write_text("# nothing here\n")
    got = expand_inputs([str(tree / "*.mov"), empty, tree / "blank.txt", tree / "missing.mp4"])
    assert [(i.path.name, i.problem) for i in got] == [
        ("*.mov", "no files match this pattern"),
        ("empty", "no videos in folder (use --recursive to search subfolders)"),
        ("blank.txt", "list of videos is empty"),
        ("missing.mp4", "video not found"),  # found out before the model loads
    ]
    (tree / "locked.mp4").write_bytes(b"x")
    (tree / "locked.mp4").chmod(0)
    unreadable = expand_inputs([tree / "locked.mp4"])[0].problem
    assert unreadable == ("permission denied" if os.geteuid() != 0 else None)  # root reads all


def test_shards_partition_the_list_deterministically(tmp_path: Path) -> None:
    items = list(range(10))
    shards = [take_shard(items, (i, 3)) for i in range(3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert sorted(x for s in shards for x in s) == items
    assert take_shard(items, None) == items
    assert parse_shard("2/4") == (2, 4)
    for bad in ("4/4", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(UsageError, match="--shard"):
            parse_shard(bad)


def test_output_paths_keep_folder_layout_and_refuse_collisions(tree: Path) -> None:
    out = tree / "out"
    inputs = expand_inputs([tree], recursive=True)
    tasks = plan_tasks(inputs, out, FORMATS["slp"])
    assert [t.output.relative_to(out).as_posix() for t in tasks] == [
        "a.avi.predictions.slp",
        "b.mp4.predictions.slp",
        "sub/c.MP4.predictions.slp",
        "sub/deeper/d.mkv.predictions.slp",
    ]
    default = plan_tasks(expand_inputs([tree / "b.mp4"]), None, FORMATS["analysis-h5"])
    assert default[0].output == tree / "b.mp4.predictions.analysis.h5"
    single = plan_tasks(expand_inputs([tree / "b.mp4"]), tree / "x.slp", FORMATS["slp"])
    assert single[0].output == tree / "x.slp"
    with pytest.raises(UsageError, match=r"a --format csv file should end in \.csv"):
        plan_tasks(expand_inputs([tree / "b.mp4"]), tree / "x.slp", FORMATS["csv"])
    with pytest.raises(UsageError, match="must be a folder when predicting 2 videos"):
        plan_tasks(expand_inputs([tree / "b.mp4", tree / "a.avi"]), tree / "x.slp", FORMATS["slp"])
    _touch(tree / "other" / "b.mp4")
    with pytest.raises(UsageError, match=r"would both write .*b\.mp4\.predictions\.slp"):
        plan_tasks(expand_inputs([tree / "b.mp4", tree / "other" / "b.mp4"]), out, FORMATS["slp"])


def test_sleap_projects_are_inputs_when_named_not_from_folders(tmp_path: Path) -> None:
    hdf5 = b"\x89HDF\r\n\x1a\n" + bytes(100)  # enough for the cheap check; not opened
    for name in ("proj.slp", "train.pkg.slp", "clip.mp4", "clip.mp4.predictions.slp", ".x.slp"):
        (tmp_path / name).write_bytes(hdf5)
    got = expand_inputs([tmp_path])  # a project next to its videos would predict them twice
    assert [i.path.name for i in got] == ["clip.mp4"]
    named = expand_inputs([tmp_path / "proj.slp", tmp_path / "train.pkg.slp"])
    assert [(i.path.name, i.problem) for i in named] == [
        ("proj.slp", None),
        ("train.pkg.slp", None),
    ]
    named = expand_inputs([tmp_path / "clip.mp4.predictions.slp"])  # named: the user means it
    assert [(i.path.name, i.problem) for i in named] == [("clip.mp4.predictions.slp", None)]
    tasks = plan_tasks(expand_inputs([tmp_path / "train.pkg.slp"]), None, FORMATS["slp"])
    assert tasks[0].output == tmp_path / "train.pkg.slp.predictions.slp"


def test_a_damaged_project_is_found_before_the_model_loads(tmp_path: Path) -> None:
    (tmp_path / "junk.slp").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "empty.pkg.slp").write_bytes(b"")
    # HDF5 allows a user block before the signature (512 bytes or a power of two above).
    (tmp_path / "block.slp").write_bytes(bytes(1024) + b"\x89HDF\r\n\x1a\n" + bytes(64))
    got = expand_inputs([tmp_path / "junk.slp", tmp_path / "empty.pkg.slp", tmp_path / "block.slp"])
    assert [(i.path.name, i.problem) for i in got] == [
        ("junk.slp", "not a readable SLEAP project (not an HDF5 file)"),
        ("empty.pkg.slp", "not a readable SLEAP project (empty file)"),
        ("block.slp", None),
    ]


def test_broken_links_in_an_input_folder_are_failed_inputs(tmp_path: Path) -> None:
    """Dangling links and link loops used to be passed over silently (exit 0); they are
    named as failed inputs, as a missing file named on the command line is."""
    (tmp_path / "a.mp4").write_bytes(b"video")
    (tmp_path / "gone.mp4").symlink_to(tmp_path / "missing.mp4")
    (tmp_path / "loop1.avi").symlink_to(tmp_path / "loop2.avi")
    (tmp_path / "loop2.avi").symlink_to(tmp_path / "loop1.avi")
    (tmp_path / "notes.txt").symlink_to(tmp_path / "missing.txt")  # no video by its name
    want = [
        ("a.mp4", None),
        (
            "gone.mp4",
            f"broken symbolic link (its target {tmp_path / 'missing.mp4'} does not exist)",
        ),
        ("loop1.avi", "symbolic link loop"),
        ("loop2.avi", "symbolic link loop"),
    ]
    for args in (
        [tmp_path],
        [str(tmp_path / "*.*[4i]")],
        [tmp_path / "gone.mp4", tmp_path / "a.mp4", tmp_path / "loop1.avi", tmp_path / "loop2.avi"],
    ):
        got = sorted((i.path.name, i.problem) for i in expand_inputs(args))
        assert got == want, args
    tasks = plan_tasks(expand_inputs([tmp_path]), None, FORMATS["slp"])
    assert [t.problem is not None for t in tasks] == [False, True, True, True]
