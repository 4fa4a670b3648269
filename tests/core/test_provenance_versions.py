"""Package versions are looked up once per process, not once per output file (issue 32)."""

from __future__ import annotations

from importlib import metadata

from sleap_infer.core import provenance


def test_versions_are_looked_up_once_per_run(monkeypatch) -> None:
    calls: list[str] = []
    real = metadata.version

    def counting(name: str) -> str:
        calls.append(name)
        return real(name)

    monkeypatch.setattr(provenance.metadata, "version", counting)
    provenance.installed_version.cache_clear()
    try:
        first = [provenance.package_versions() for _ in range(20)]  # one per video
    finally:
        provenance.installed_version.cache_clear()
    assert len(calls) == len(provenance.PREDICTION_PACKAGES)
    assert all(v == first[0] for v in first)
    assert first[0]["numpy"] == real("numpy")


def test_missing_packages_are_left_out() -> None:
    assert "no-such-package-xyz" not in provenance.package_versions(("no-such-package-xyz",))
