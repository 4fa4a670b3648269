"""Model files that are not regular files are refused in one line, never read (core.files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sleap_infer.core.errors import ModelError
from sleap_infer.core.files import check_file, read_bytes_bounded, read_text_bounded


def test_a_fifo_is_refused_without_blocking(tmp_path: Path, alarm: None) -> None:
    fifo = tmp_path / "training_config.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ModelError, match=r"training_config\.yaml: is a FIFO \(named pipe\), not"):
        read_text_bounded(fifo, 1 << 20, ModelError)
    with pytest.raises(ModelError, match="FIFO"):
        check_file(fifo, 1 << 20, ModelError)


def test_a_link_to_dev_zero_is_refused_not_read(tmp_path: Path, alarm: None) -> None:
    link = tmp_path / "model.onnx"
    link.symlink_to("/dev/zero")
    with pytest.raises(ModelError, match=r"is a character device \(a link to /dev/zero\)"):
        read_bytes_bounded(link, 1 << 20, ModelError)


def test_size_bound_and_plain_files(tmp_path: Path) -> None:
    big = tmp_path / "export_metadata.json"
    big.write_bytes(b"x" * 101)
    with pytest.raises(ModelError, match=r"101 bytes, more than the 100 bytes"):
        read_bytes_bounded(big, 100, ModelError)
    assert read_text_bounded(big, 101, ModelError) == "x" * 101
    with pytest.raises(ModelError, match=r"nope\.json: cannot read \(No such file"):
        read_bytes_bounded(tmp_path / "nope.json", 100, ModelError)
