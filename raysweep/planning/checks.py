"""The checks of a trial: before Ray starts (``check_values``), and in planning (``check_trial``, ``check_files``).

``check_values`` decides what the values and the model's declared shape decide, without torch or timm:
a sweep that can never train is refused before Ray starts. ``check_trial`` needs the trainers'
registries (timm, the dataset table) and the filesystem, so it belongs to planning, on the started
cluster before any trial starts; so does ``check_files``, the header of every image of each image
folder the trials read. With ``--address`` the data lives on the cluster's nodes, so the files are not
checked here.
"""

from __future__ import annotations

import os
from pathlib import Path

from raysweep.core.errors import DataFileError, UsageError
from raysweep.core.params import TrialParams, choose


def check_values(params: TrialParams) -> None:
    """The values and their combinations, and what the model's declared shape rules out (no torch, no timm)."""
    from trainers.model.models import check_model_name, declared_patch_size
    from trainers.model.sequence_parallel_check import check_sequence_parallel, declared_token_shape
    from trainers.model.tensor_parallel_check import check_tensor_parallel, declared_width_shape

    params.validate()
    patch = declared_patch_size(params.model)
    if patch and 0 < params.image_size < patch:
        # A patch size read off a mistyped name is no reason to blame the image size: name the model first
        # (this path alone imports timm).
        check_model_name(params.model)
        raise UsageError(
            f"image_size={params.image_size} is smaller than the {patch}-pixel patches of model={params.model}: "
            f"no patch fits; use image_size >= {patch}"
        )
    shape = declared_token_shape(params.model, params.image_size)
    if shape is not None:
        sp = params.sequence_parallel
        check_sequence_parallel(
            sp, shape, params.zero_stage, params.engine, params.num_workers, f"model={params.model}"
        )
    widths = declared_width_shape(params.model)
    if widths is not None:
        check_tensor_parallel(
            params.tensor_parallel, widths, params.engine, params.num_workers, f"model={params.model}"
        )


def check_trial(params: TrialParams, *, local_files: bool = True) -> None:
    """Validate the values, then that the dataset and model exist and (``local_files``) the data is in place."""
    from trainers.data.datasets import DATASETS, check_data_dir
    from trainers.model.models import check_model_name
    from trainers.model.sequence_parallel_check import check_trial as check_sequence_parallel
    from trainers.model.tensor_parallel_check import check_trial as check_tensor_parallel

    choose("dataset", params.dataset, tuple(DATASETS))
    check_model_name(params.model)
    params.validate()
    check_sequence_parallel(params)  # heads and tokens the SP degree must divide, read from the model
    check_tensor_parallel(params)  # heads and widths the TP degree must divide, read from the model
    if not (local_files and params.data_dir):
        return
    if not Path(params.data_dir).is_dir():
        if not params.download:
            raise UsageError(
                f"data_dir {params.data_dir} is not a directory (add --download to fetch {params.dataset} there)"
            )
        return
    if not os.access(params.data_dir, os.R_OK | os.X_OK):
        raise UsageError(f"data_dir {params.data_dir} is not readable by this user, whom the local workers run as")
    check_data_dir(params.dataset, params.data_dir, params.download, params.in_chans)


def check_files(trials: list[TrialParams]) -> list[str]:
    """Every image's header in each image folder the trials read (once a folder): the first unsound one raises its
    ``DataFileError``, unless its trials skip bad files; then the notes say how many they will skip."""
    from trainers.data.imagefolder import unreadable_images

    folders = {(t.data_dir, t.skip_bad_files) for t in trials if t.dataset == "imagefolder" and t.data_dir}
    notes, faults_of = [], {}
    for data_dir, skip in sorted(folders):
        if data_dir not in faults_of:
            faults_of[data_dir] = unreadable_images(data_dir)
        faults: list[DataFileError] = faults_of[data_dir]
        if faults and not skip:
            raise faults[0]
        if faults:
            notes.append(
                f"imagefolder: {len(faults)} file(s) of {data_dir} cannot be read and are skipped "
                f"(skip_bad_files), the first {faults[0].path} {faults[0].reason}"
            )
    return notes
