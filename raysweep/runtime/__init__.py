"""Ray itself, in one wing: the cluster's lifecycle and capacity, the torch backend, Train runs, worker
groups, the trial driver, the searcher, Ray's logs and the bytecode cache of Ray's processes.

The runtime is handed plans (it imports nothing of the orchestration above it) and records through
the result store; it never analyses.  Every use of a Ray private API lives here, each checked
against Ray 2.58.0 (why ``pyproject.toml`` pins Ray exactly):

- ``cluster``: ``ray._private.worker._global_node.get_session_dir_path()`` (the local session whose
  processes a killed sweep leaves behind), ``ray._private.worker.global_worker.node.webui_url`` (the
  dashboard's address), the ``RAY_GCS_SERVER_PORT`` environment variable (the local head's GCS port, read by
  ``ray._private.node``);
  ``ray._private.ray_constants.ENABLE_RAY_CLUSTER``, ``ray._raylet.Config.initialize`` and
  ``ray._raylet.AuthenticationTokenLoader`` (this process's Ray reading the loopback and token settings
  again, as Ray's own ``ray._private.authentication_test_utils`` does) and
  ``ray._private.authentication.authentication_token_generator`` (a token made as Ray makes it);
- ``ray_logs``: ``ray._private.ray_logging.global_worker_stdstream_dispatcher`` (to quiet what
  workers forward to the driver) and ``ray._private.worker._global_node`` (the logs directory);
- ``torch_backend``: ``ray._private.ray_constants``, ``ray.train._internal.utils.get_address_and_port``
  and ``ray.train.v2._internal.util.TrainingFramework`` (Ray Train's own torch backend, re-timed);
- ``train_run``: ``ray.data._internal.cluster_autoscaler`` (the coordinator actor Train starts per run,
  started once per sweep instead);
- ``failures``: ``ray.train.v2._internal.exceptions.UserExceptionWithTraceback._base_exc`` (a worker's
  own exception, inside the traceback wrapper Ray Train gives it).
"""
