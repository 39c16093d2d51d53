"""The one error the analysis raises for bad input; the command line prints it on one line and exits 2.

It is a ``UsageError``: the commands' one mapping of errors to exit codes (``raysweep.core.command``) takes it.
"""

from raysweep.core.errors import UsageError


class AnalysisError(UsageError):
    """The sweep cannot be analysed as asked: missing or empty directory, missing columns, nothing to compare."""
