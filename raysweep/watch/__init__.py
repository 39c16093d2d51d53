"""Watching a sweep: the terminal's live view, the sweep's gauges, TensorBoard and experiment trackers."""
