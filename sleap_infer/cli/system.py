"""``infer system``: versions, devices, and which runtimes can run here (and why not).

The facts come from :func:`~sleap_infer.bench.system.system_facts`, which turns
every failure into a reason, so this command works on any machine: no GPU, no
onnxruntime, a broken TensorRT. Paste its output (or ``--json``) into bug reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from sleap_infer.cli.console import console
from sleap_infer.cli.help import exit_codes
from sleap_infer.cli.info import JsonOption, OverwriteJson

EPILOG = exit_codes(ok="reported (and --json written)", failed="--json cannot be written")
SYSTEM_SCHEMA = "sleap_infer.system/1"


def system(json_path: JsonOption = None, overwrite: OverwriteJson = False) -> None:
    """Show versions, devices (CPU, CUDA GPUs, MPS) and which runtimes can run on this
    machine; each one that cannot says why."""
    from sleap_infer.bench.system import system_facts
    from sleap_infer.writers.side_files import check_side_file, write_json

    if json_path is not None:
        check_side_file(Path(json_path), "--json", SYSTEM_SCHEMA, overwrite=overwrite)
    with console.status("Checking...", spinner="dots"):
        facts = system_facts()
    for table in (versions_table(facts), devices_table(facts), runtimes_table(facts)):
        console.print(table)
    if facts["onnxruntime_providers"]:
        console.print(providers_table(facts))
    if json_path is not None:
        failure = f"--json {json_path}: cannot write the system facts"
        payload = {"schema": SYSTEM_SCHEMA, **facts}
        write_json(Path(json_path), payload, failure, schema=SYSTEM_SCHEMA, overwrite=overwrite)
        console.print(f"facts -> {escape(str(json_path))}", highlight=False, soft_wrap=True)


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", highlight=False)
    for i, name in enumerate(columns):
        table.add_column(name, no_wrap=i == 0, overflow="fold")
    return table


def versions_table(facts: dict[str, Any]) -> Table:
    table = _table("Versions", "package", "version")
    for name, version in facts["versions"].items():
        table.add_row(name, escape(version or "not installed"))
    return table


def _cuda(cuda: dict[str, Any]) -> list[tuple[str, str, str]]:
    built = cuda["torch_built_for"]
    built = f"torch built for CUDA {built}" if built else "CPU-only torch build"
    driver = f"NVIDIA driver {cuda['driver'] or 'not found'}"
    if not cuda["available"]:
        return [("CUDA", "no", f"{cuda['reason']} [{built}; {driver}]")]
    rows = []
    for gpu in cuda["gpus"]:
        rows.append(
            (
                f"cuda:{gpu['index']}",
                "yes",
                f"{gpu['name']}, {gpu['memory_gib']} GiB, compute capability "
                f"{gpu['compute_capability']}, {gpu['multiprocessors']} SMs",
            )
        )
    visible = cuda["visible_devices"]
    extra = "" if visible is None else f"; CUDA_VISIBLE_DEVICES={visible}"
    rows.append(("CUDA", "yes", f"{built}, cuDNN {cuda['cudnn']}; {driver}{extra}"))
    return rows


def devices_table(facts: dict[str, Any]) -> Table:
    devices = facts["devices"]
    cpu = devices["cpu"]
    table = _table("Devices", "device", "usable", "what")
    table.add_row(
        "CPU",
        "yes",
        escape(
            f"{cpu['name']} ({cpu['arch']}), {cpu['usable_cores']} of {cpu['logical_cores']} "
            f"cores usable, torch uses {cpu['torch_threads']} threads"
        ),
    )
    for name, usable, what in _cuda(devices["cuda"]):
        table.add_row(name, usable, escape(what))
    mps = devices["mps"]
    table.add_row("MPS", "yes" if mps["available"] else "no", escape(mps["reason"] or "Apple GPU"))
    return table


def runtimes_table(facts: dict[str, Any]) -> Table:
    table = _table("Runtimes (--backend on --device)", "runtime", "device", "available", "detail")
    for check in facts["runtimes"]:
        table.add_row(
            check["runtime"],
            check["device"] or "-",
            "yes" if check["available"] else "no",
            escape(check["detail"]),
        )
    return table


def providers_table(facts: dict[str, Any]) -> Table:
    table = _table("ONNX Runtime providers", "provider", "usable", "note")
    for provider in facts["onnxruntime_providers"]:
        used = "--backend onnx uses it; " if provider["used_by_sleap_infer"] else ""
        table.add_row(
            provider["name"],
            "yes" if provider["usable"] else "no",
            escape(used + provider["note"]),
        )
    return table
