"""What a rank measures: clocks, warm-up, FLOPs, energy, memory, stragglers, live gauges and their reports."""
