"""On-disk caches a sweep's processes share: Python's bytecode and torch.compile's kernels."""
