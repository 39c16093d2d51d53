"""The per-worker side of a trial: model, data, DeepSpeed engine, timing and the training loop."""
