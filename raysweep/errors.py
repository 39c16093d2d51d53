"""The one error type the command line turns into a one-line message and exit status 2."""


class UsageError(Exception):
    """Bad input from the user: a flag, a space file, a parameter value, a path."""
