"""``python -m analysis.predict``: the predicted-scaling command (``analysis.prediction.predict``), short."""

from analysis.prediction.predict import main, predict_scaling

__all__ = ["main", "predict_scaling"]

if __name__ == "__main__":
    raise SystemExit(main())
