"""``--log-to mlflow|wandb``: refused in one line, exit 2, before anything starts, when the package is missing."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from raysweep.tune import main
from tests.cli_helpers import no_sweep_starts  # noqa: F401


@pytest.mark.parametrize("tracker", ["mlflow", "wandb"])
def test_missing_tracker_package_is_one_line_exit_2_and_nothing_written(tracker, tmp_path, capsys):
    if find_spec(tracker) is not None:
        pytest.skip(f"{tracker} is installed here")
    results = tmp_path / "results"
    code = main(["--space", "batch_grid", "--results-dir", str(results), "--log-to", tracker])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.strip().splitlines() == [
        f"raysweep: error: --log-to {tracker} needs the {tracker} package, which is not installed "
        f"(pip install {tracker})"
    ]
    assert out == "" and not results.exists()


def test_unknown_tracker_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--space", "batch_grid", "--log-to", "comet"])
    assert e.value.code == 2
    assert "invalid choice: 'comet'" in capsys.readouterr().err
