"""Watching a sweep beside the terminal: the sweep's gauges, TensorBoard and experiment trackers."""
