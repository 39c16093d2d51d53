"""Predicted scaling: link costs, the step-time model and ``predict_scaling``."""
