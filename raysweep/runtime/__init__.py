"""Ray itself, in one wing: the cluster's lifecycle and capacity, the torch backend, Train runs, worker
groups, the trial driver, the searcher, Ray's logs and the bytecode cache of Ray's processes.

The runtime is handed plans (it imports nothing of the orchestration above it) and records through
the result store; it never analyses.  Every use of a Ray private API lives here, and is listed below;
``tests/test_ray_private_apis.py`` has a test named after each entry that fails when a Ray release
changes what raysweep relies on of it, and checks this list against the source (a new use must be
listed).  The Ray releases they are checked against are ``pyproject.toml``'s range.

- ``cluster``: ``ray._private.worker._global_node`` (its session directory: the local session whose
  processes a killed sweep leaves behind), ``ray._private.worker.global_worker`` (its node's webui_url:
  the dashboard's address), and the ``RAY_GCS_SERVER_PORT`` environment variable (the local head's GCS
  port, read by Ray's node start-up);
  ``ray._private.ray_constants`` (ENABLE_RAY_CLUSTER), ``ray._raylet.Config`` (initialize) and
  ``ray._raylet.AuthenticationTokenLoader`` (this process's Ray reading the loopback and token settings
  again, as Ray's own authentication test utilities do), ``ray._raylet.AuthenticationMode`` and
  ``ray._raylet.get_authentication_mode`` (whether token authentication is on) and
  ``ray._private.authentication.authentication_token_generator.generate_new_authentication_token`` (a
  token made as Ray makes it);
- ``ray_logs``: ``ray._private.ray_logging.global_worker_stdstream_dispatcher`` (to quiet what
  workers forward to the driver) and ``ray._private.worker._global_node`` (the logs directory);
- ``torch_backend`` (Ray Train's own torch backend, re-timed): ``ray._private.ray_constants`` (env_integer),
  ``ray.train._internal.utils.get_address_and_port``, ``ray.train.v2._internal.util.TrainingFramework``, the
  rank-side set-up ``ray.train.torch.config._set_torch_distributed_env_vars``,
  ``ray.train.torch.config._setup_torch_process_group`` and ``ray.train.torch.config._shutdown_torch``, and the
  worker group Ray Train hands the backend's hooks (its execute methods);
- ``train_run``:
  ``ray.data._internal.cluster_autoscaler.default_autoscaling_coordinator.get_or_create_autoscaling_coordinator``
  (the coordinator actor Train starts per run, started once per sweep instead) and
  ``ray.train.v2._internal.callbacks.datasets.DatasetsCallback`` (left out of the callbacks a run without datasets
  makes in ``_create_default_callbacks``: it starts Ray Data's manager actor for every worker group);
- ``early_stop``: ``ray.train._internal.session.get_session`` (the trial's session, whose stop_event Tune
  sets when it stops the trial);
- ``failures``: ``ray.train.v2._internal.exceptions.UserExceptionWithTraceback._base_exc`` (a worker's
  own exception, inside the traceback wrapper Ray Train gives it).
"""
