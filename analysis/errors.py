"""The one error the analysis raises for bad input; the command line prints it on one line and exits 2."""


class AnalysisError(Exception):
    """The sweep cannot be analysed as asked: missing or empty directory, missing columns, nothing to compare."""
