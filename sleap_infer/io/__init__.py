"""Inputs (video decoding, frame selection) and outputs (prediction files)."""
