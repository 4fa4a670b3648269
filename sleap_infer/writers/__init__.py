"""Writers: what turns predictions into files.

A format registry (``registry.py``) names each format and its writer, as the
model-type registry names each type and its layer; every writer is fed from
the journal and lands atomically.
"""
