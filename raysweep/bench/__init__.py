"""Benchmarks a user runs on their own hardware; the library never imports them.

``python -m raysweep.bench`` (``stack``): the full stack against plain PyTorch on one device;
``python -m raysweep.bench.floor``: the cold-process floor of a rank's start-up;
``python -m raysweep.bench.input_pipeline``: the image-folder input pipeline alone.
"""
