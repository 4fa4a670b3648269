"""``infer predict`` options for what an NWB output says of its session and subject
(:class:`~sleap_infer.core.nwb_metadata.NwbMetadata`); only ``--format nwb`` uses them."""

from __future__ import annotations

from typing import Annotated

import typer

PANEL = "NWB session and subject (--format nwb)"


def _text(metavar: str, help: str) -> typer.models.OptionInfo:
    return typer.Option(metavar=metavar, help=help, rich_help_panel=PANEL, show_default=False)


Subject = Annotated[str | None, _text("ID", "Subject id (DANDI: sub-<ID>).")]
Species = Annotated[
    str | None, _text("NAME", "Latin binomial (Mus musculus) or an NCBI taxonomy URL.")
]
Sex = Annotated[str | None, _text("M|F|U|O", "Subject sex (default U: unknown).")]
Age = Annotated[str | None, _text("ISO8601", "Subject age as an ISO 8601 duration (P90D).")]
SessionStart = Annotated[
    str | None,
    _text(
        "TIME",
        "When the recording started, ISO 8601 (default: the video file's recorded creation "
        "time; without one, the time of writing, said in the file).",
    ),
]
Experimenter = Annotated[str | None, _text("NAMES", "Experimenters, 'Last, First'; ';' between.")]
Institution = Annotated[str | None, _text("NAME", "Institution.")]
Lab = Annotated[str | None, _text("NAME", "Lab.")]
SessionDescription = Annotated[str | None, _text("TEXT", "Session description.")]
MetadataFile = Annotated[
    str | None,
    _text(
        "FILE.yaml",
        "All of the above at once: keys subject, species, sex, age, session_start_time, "
        "experimenter, institution, lab, session_description (options given win).",
    ),
]
