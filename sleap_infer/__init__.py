"""sleap_infer: fast, robust batch pose prediction for sleap-nn models."""

__version__ = "0.1.0"
