"""Trained model directories: the model-type registry, config parsing, checkpoint loading."""
