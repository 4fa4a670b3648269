"""List every key of sleap-nn's training-config schema that inference may read.

Usage: ``python tools/sleap_nn_config_keys.py <sleap_nn package dir>`` (e.g. the
unpacked ``sleap_nn-0.3.5`` wheel: ``pip download sleap-nn==0.3.5 --no-deps``).
It reads the attrs classes of ``config/model_config.py`` and ``config/data_config.py``
with :mod:`ast` (sleap-nn is never imported) and prints one dotted key per line,
walking nested config classes, for ``model_config`` and ``data_config.preprocessing``.
The output is committed as ``sleap_infer/model/sleap_nn_config_keys.txt``; the
verdict of each key lives in ``sleap_infer/model/schema.py``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOTS = (("model_config", "ModelConfig"), ("data_config.preprocessing", "PreprocessingConfig"))


def _classes(paths: list[Path]) -> dict[str, list[tuple[str, str]]]:
    """Class name -> [(field, annotation and default source)] for annotated class fields."""
    out: dict[str, list[tuple[str, str]]] = {}
    for path in paths:
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            fields = []
            for base in node.bases:  # inherited fields (UNetLargeRFConfig(UNetConfig))
                if isinstance(base, ast.Name) and base.id in out:
                    fields += out[base.id]
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    text = ast.unparse(stmt.annotation)
                    if stmt.value is not None:
                        text += " = " + ast.unparse(stmt.value)
                    fields = [f for f in fields if f[0] != stmt.target.id]
                    fields.append((stmt.target.id, text))
            out[node.name] = fields
    return out


def _walk(classes: dict[str, list[tuple[str, str]]], name: str, prefix: str) -> list[str]:
    keys = []
    for field, text in classes[name]:
        key = f"{prefix}.{field}"
        keys.append(key)
        nested = [
            c
            for c in classes
            if (c.endswith("Config") and f"[{c}]" in text)
            or (c.endswith("Config") and (text.startswith(c) or f"factory={c}" in text))
        ]
        for child in nested:
            keys += _walk(classes, child, key)
    return keys


def main(package: Path) -> None:
    classes = _classes(
        [package / "config" / "data_config.py", package / "config" / "model_config.py"]
    )
    for prefix, root in ROOTS:
        for key in _walk(classes, root, prefix):
            print(key)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
