"""``python -m raysweep`` is ``python -m raysweep.tune``."""

from raysweep.core.command import exit_process
from raysweep.tune import main

if __name__ == "__main__":
    exit_process(main())
