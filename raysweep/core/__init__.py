"""The shared vocabulary, at the ground floor: trial parameters and their validation, the trial spec a
rank is handed, trial statuses, errors, the result schema and its tables.

``trainers/`` (a rank) and ``analysis/`` (tables to findings) import only this package of ``raysweep``;
it imports none of them, nor Ray (``tests/test_layers.py`` pins both).
"""
