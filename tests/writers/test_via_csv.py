"""VIA-tracks CSV keeps class names that hold commas, quotes or newlines in one field."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import sleap_io as sio

from sleap_infer.core.boxes import BoxSet
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import read_journal
from sleap_infer.writers.outputs import write_from_journal
from sleap_infer.writers.registry import FORMATS
from sleap_infer.writers.via_csv import HEADER

from slp_tables import write_journal

ODD = ("ear, left", 'say "hi"', "line\nbreak")


def test_odd_category_names_stay_one_field(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    preds = BatchPredictions.empty(2, 3)
    preds.frame_indices = np.arange(2)
    x1y1 = rng.uniform(0, 40, (3, 2))
    xyxy = np.concatenate([x1y1, x1y1 + 5], axis=1)
    score = np.array([0.9, 0.8, 0.7], np.float32)
    preds.boxes = BoxSet.build(np.array([0, 0, 1]), xyxy, score, np.array([0, 1, 2]))
    journal = read_journal(write_journal(tmp_path / "j.partial", [preds]))
    video = sio.Video(
        filename="v.mp4", backend_metadata={"shape": [2, 64, 64, 1], "fps": 30.0},
        open_backend=False,
    )  # fmt: skip
    out = tmp_path / "v.via.csv"
    write_from_journal(
        journal, out, FORMATS["via-csv"], video, sio.Skeleton(["a"]), (), {},
        box_categories=ODD, poses=False,
    )  # fmt: skip
    with out.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == HEADER
    assert {len(row) for row in rows} == {len(HEADER)}
    assert [json.loads(row[6])["category"] for row in rows[1:]] == list(ODD)
