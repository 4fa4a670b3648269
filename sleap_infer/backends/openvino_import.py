"""Importing OpenVINO's runtime without its model converter, whose import phones home.

``import openvino`` also imports ``openvino.tools.ovc``, the converter behind
``openvino.convert_model``, and that import starts OpenVINO's telemetry: unless a consent
file says no or a CI variable is set, it writes a client ID and counters into
``~/intel/`` and sends a ``general_import`` event to Google Analytics from a worker
thread. A lab running ``infer predict`` never asked for either, and the thread is a
non-daemon ``ThreadPoolExecutor`` worker, so a normal exit waits for the send, and while
it is alive :mod:`sleap_infer.cli.fast_exit` must take the normal exit. We never convert
models with OpenVINO (it reads our ONNX exports through ``Core.read_model``), so
:func:`import_openvino` keeps the converter out: a placeholder module stands at
``openvino.tools.ovc`` while ``openvino`` is imported, which OpenVINO's ``__init__``
takes as "converter not installed" (its own ``try: from openvino.tools.ovc import
convert_model / except ImportError``), and is removed right after, so an ``import
openvino.tools.ovc`` later in the process gets the real converter, and its telemetry is
then the caller's choice. An OpenVINO whose ``__init__`` stops tolerating a missing
converter is imported the ordinary way.

Measured (OpenVINO 2026.4, 2-vCPU VM, three fresh processes each): the import took
0.035-0.040 s instead of 0.105-0.153 s, no thread was left behind, and nothing was
written to ``~/intel/``.
"""

from __future__ import annotations

import sys
from types import ModuleType

CONVERTER = "openvino.tools.ovc"


def import_openvino() -> ModuleType:
    """The ``openvino`` module, imported without its converter if not imported yet.

    Raises ImportError where OpenVINO is not installed (or cannot be imported)."""
    loaded = sys.modules.get("openvino")
    if loaded is not None:
        return loaded
    if CONVERTER in sys.modules:  # someone imported the converter already: nothing to keep out
        import openvino

        return openvino
    placeholder = ModuleType(CONVERTER, "stands in for OpenVINO's converter (not used)")
    sys.modules[CONVERTER] = placeholder
    try:
        import openvino
    except ImportError:
        # An OpenVINO that needs its converter: drop the half-imported package, then
        # import it as anyone would.
        for name in [n for n in sys.modules if n == "openvino" or n.startswith("openvino.")]:
            del sys.modules[name]
        import openvino
    finally:
        if sys.modules.get(CONVERTER) is placeholder:
            del sys.modules[CONVERTER]
    return openvino
