"""``python -m raysweep`` is ``python -m raysweep.tune``."""

from raysweep.tune import main

if __name__ == "__main__":
    raise SystemExit(main())
