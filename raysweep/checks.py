"""Planning checks of a trial against what exists: dataset and model registries, and the data on disk.

``TrialParams.validate`` checks values and their combinations only; these checks need the trainers'
registries (timm, the dataset table) and the filesystem, so they belong to planning, on the machine
that plans. With ``--address`` the data lives on the cluster's nodes, so the files are not checked here.
"""

from __future__ import annotations

from pathlib import Path

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams, choose


def check_trial(params: TrialParams, *, local_files: bool = True) -> None:
    """Validate the values, then that the dataset and model exist and (``local_files``) the data is in place."""
    from trainers.datasets import DATASETS, check_data_dir
    from trainers.models import check_model_name
    from trainers.sequence_parallel_check import check_trial as check_sequence_parallel

    choose("dataset", params.dataset, tuple(DATASETS))
    check_model_name(params.model)
    params.validate()
    check_sequence_parallel(params)  # heads and tokens the SP degree must divide, read from the model
    if not (local_files and params.data_dir):
        return
    if not Path(params.data_dir).is_dir():
        if not params.download:
            raise UsageError(
                f"data_dir {params.data_dir} is not a directory (add --download to fetch {params.dataset} there)"
            )
        return
    check_data_dir(params.dataset, params.data_dir, params.download, params.in_chans)
