"""A sweep's results: the tables written as trials report, their summary and duty cycle, text tables."""
