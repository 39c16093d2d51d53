"""``python -m analysis.predict``: the predicted-scaling command (``analysis.prediction.predict``), short."""

from analysis.prediction.predict import main, predict_scaling
from raysweep.core.command import exit_process

__all__ = ["main", "predict_scaling"]

if __name__ == "__main__":
    exit_process(main())
