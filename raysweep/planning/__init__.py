"""Planning a sweep: its space and search, every trial checked for the cluster, the largest batch that fits."""
