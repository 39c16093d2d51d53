"""The model a rank trains: models by name, activation checkpointing and sequence parallelism over its tokens."""
