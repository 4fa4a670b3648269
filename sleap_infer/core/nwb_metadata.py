"""What an NWB file says about its session and subject (``--nwb-*``, ``--nwb-metadata``).

DANDI and nwbinspector want a subject (id, species, sex, age) and the time the
recording started; only the lab knows them, so they are options, given one by
one or all at once in a YAML file whose keys are the option names without the
``nwb_`` prefix (``subject``, ``species``, ``session_start_time`` ...). An
option given on the command line wins over the file. The record is resolved
when bound (a bad file or time is one line before any model loads) and only
the NWB writer reads it: it never enters the journal's fingerprint, so a resumed
run may change it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sleap_infer.core.errors import UsageError

SEXES = ("M", "F", "U", "O", "XX", "XO")  # NWB's codes; XX / XO for C. elegans
DANDI_SUBJECT = ("subject", "species", "age")  # what DANDI requires of the subject (sex: U)


@dataclass(frozen=True)
class NwbMetadata:
    """The session and subject an NWB output describes; None: not given."""

    nwb_subject: str | None = None  # subject_id
    nwb_species: str | None = None  # Latin binomial ("Mus musculus") or NCBI taxonomy URL
    nwb_sex: str | None = None  # M, F, U (unknown), O (other)
    nwb_age: str | None = None  # ISO 8601 duration, e.g. P90D
    nwb_session_start_time: str | None = None  # ISO 8601; default: the video's creation time
    nwb_experimenter: str | None = None  # "Last, First"; several separated by ";"
    nwb_institution: str | None = None
    nwb_lab: str | None = None
    nwb_session_description: str | None = None
    nwb_metadata: str | None = None  # a YAML file with any of the above (keys without nwb_)

    def __post_init__(self) -> None:
        if self.nwb_metadata is not None:
            for key, value in read_metadata_file(Path(self.nwb_metadata)).items():
                if getattr(self, key) is None:
                    object.__setattr__(self, key, value)
        if self.nwb_sex is not None and self.nwb_sex not in SEXES:
            raise UsageError(f"--nwb-sex {self.nwb_sex!r}: choose from {', '.join(SEXES)}")
        self.session_start()  # a bad time fails now, not after predicting

    def session_start(self) -> datetime | None:
        """The given session start time (timezone-aware; UTC when none was written)."""
        text = self.nwb_session_start_time
        if text is None:
            return None
        return parse_time(text, "--nwb-session-start-time")

    def check_format(self, fmt: str) -> None:
        """Options for a file that will not be written are a mistake worth one line."""
        given = [f.name for f in fields(self) if getattr(self, f.name) is not None]
        if given and fmt != "nwb":
            flags = ", ".join("--" + name.replace("_", "-") for name in given)
            raise UsageError(f"{flags} only matter with --format nwb (not {fmt})")

    def dandi_warning(self) -> str | None:
        """One line, once a run (not per video), when the subject DANDI needs is not all
        given: the files still write (subject ``unknown``), but DANDI refuses them and
        nwbinspector says CRITICAL / BEST_PRACTICE_VIOLATION; only the lab knows the values."""
        missing = [f"--nwb-{key}" for key in DANDI_SUBJECT if getattr(self, f"nwb_{key}") is None]
        if not missing:
            return None
        return (
            f"--format nwb without {', '.join(missing)}: DANDI needs the subject's id, "
            "species and age (give them, or --nwb-metadata FILE.yaml)"
        )

    @property
    def experimenters(self) -> list[str] | None:
        if not self.nwb_experimenter:
            return None
        return [name.strip() for name in self.nwb_experimenter.split(";") if name.strip()]


KEYS = {
    f.name.removeprefix("nwb_"): f.name for f in fields(NwbMetadata) if f.name != "nwb_metadata"
}


def parse_time(text: str, where: str) -> datetime:
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{where} {text!r}: not an ISO 8601 time (e.g. 2024-05-01T09:30:00+02:00)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def read_metadata_file(path: Path) -> dict[str, str]:
    """``{field: text}`` from a YAML mapping of ``KEYS``; one line naming the file otherwise."""
    import yaml

    try:
        data: Any = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise UsageError(f"--nwb-metadata {path}: cannot read ({reason})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"--nwb-metadata {path}: expected a mapping of {', '.join(KEYS)}")
    unknown = [str(k) for k in data if k not in KEYS]
    if unknown:
        raise UsageError(
            f"--nwb-metadata {path}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})"
        )
    return {KEYS[k]: _text(v) for k, v in data.items() if v is not None}


def _text(value: Any) -> str:
    if isinstance(value, datetime):  # YAML parses unquoted times itself
        return value.isoformat()
    if isinstance(value, list):  # experimenters as a YAML list
        return "; ".join(str(v) for v in value)
    return str(value)
