"""SLEAP 1.x (TensorFlow / Keras) model folders, run on our PyTorch networks.

A SLEAP 1.x folder holds ``training_config.json`` (SLEAP's own schema) and
``best_model.h5`` (a whole Keras model). The JSON is translated into the dict a
sleap-nn ``training_config.yaml`` would hold (:mod:`.config`), so one parser
reads model semantics; the Keras graph is vetted (:mod:`.graph`); the weights
are copied by layer name (:mod:`.weights`) with h5py (:mod:`.keras_file`), no
TensorFlow; transposed convolutions are cropped the Keras way (:mod:`.upsampling`).
"""

from sleap_infer.model.legacy.load import (
    LEGACY_CONFIG,
    LEGACY_WEIGHTS,
    check_legacy_dir,
    load_legacy,
)

__all__ = ["LEGACY_CONFIG", "LEGACY_WEIGHTS", "check_legacy_dir", "load_legacy"]
