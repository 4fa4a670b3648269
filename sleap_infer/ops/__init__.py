"""Pure tensor functions: preprocessing, peak finding, refinement. No model state here."""
