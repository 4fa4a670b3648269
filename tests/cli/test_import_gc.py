"""The ``infer`` process holds its collector off while a command's module is imported, then
freezes what the imports left and turns it back on; callers of ``main(argv)`` keep theirs."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleap_infer.cli import import_gc, main

EXAMPLE_MODEL = Path(__file__).resolve().parents[2] / "examples" / "models"


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """This test process's collector as it was: on, and nothing left frozen by the test."""
    frozen = gc.get_freeze_count()
    yield
    gc.enable()
    if gc.get_freeze_count() > frozen:
        gc.unfreeze()


@pytest.mark.usefixtures("collector_restored")
def test_hold_turns_off_and_release_freezes_and_turns_on() -> None:
    gc.enable()
    gc.unfreeze()
    held = import_gc.hold()
    assert held and not gc.isenabled()
    kept = [object(), {"imported": [1, 2]}]
    import_gc.release(held)
    assert gc.isenabled() and gc.get_freeze_count() > 0
    assert kept  # alive across the freeze


@pytest.mark.usefixtures("collector_restored")
def test_a_collector_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    held = import_gc.hold()
    assert not held
    before = gc.get_freeze_count()
    import_gc.release(held)
    assert not gc.isenabled() and gc.get_freeze_count() == before


def test_the_infer_process_imports_its_command_with_the_collector_off(tmp_path: Path) -> None:
    # build_app imports the command's module: the spy sees the collector as the import does.
    code = textwrap.dedent(
        """
        import atexit, gc, sys
        import sleap_infer.cli as cli
        seen = {}
        real = cli.build_app
        def spy(commands):
            seen.setdefault("importing", gc.isenabled())
            return real(commands)
        cli.build_app = spy
        atexit.register(lambda: print(
            f"importing={seen['importing']} after={gc.isenabled()} "
            f"frozen={gc.get_freeze_count() > 0}"
        ))
        sys.argv = ["infer", "info", sys.argv[1]]
        cli.main()
        """
    )
    model = EXAMPLE_MODEL / "synthetic_single_instance"
    done = subprocess.run(
        [sys.executable, "-c", code, str(model)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "importing=False after=True frozen=True"


def test_main_with_argv_leaves_the_callers_collector_alone() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with pytest.raises(SystemExit) as done:
        main(["info", str(EXAMPLE_MODEL / "synthetic_single_instance")])
    assert done.value.code == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen
