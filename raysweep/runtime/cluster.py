"""The Ray cluster a sweep runs on: start a private local instance or join one, and end it cleanly.

Before anything starts, a joined cluster's address must answer (``check_reachable``).  What fits on
the cluster is ``raysweep.runtime.capacity``'s.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path

from raysweep.core.errors import UsageError

LOCAL_STATE = Path(tempfile.gettempdir()) / "raysweep-local-ray.json"


def start_local(
    num_cpus: int, dashboard_host: str = "127.0.0.1", dashboard: bool = True, env_vars: dict[str, str] | None = None
) -> None:
    """A fresh local Ray instance; first stop one that a killed raysweep driver left behind. ``env_vars``:
    more environment for every process of the sweep (``raysweep.runtime.bytecode_cache.bytecode_cache``'s)."""
    import ray

    stop_orphaned_local_ray()
    # On a small, busy machine the dashboard's modules can take longer than Ray's 30 s to come up,
    # and then ray.init fails the whole sweep; give them time.
    os.environ.setdefault("RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT", "180")
    # Ray starts one idle worker process per CPU for the first driver, with no runtime environment;
    # every process of a sweep has the project's (project_runtime_env), so none of them is ever used,
    # and their start (an import of Ray each) competes for the CPUs with the first group's.
    os.environ.setdefault("RAY_prestart_worker_first_driver", "0")
    ray.init(
        address="local",
        num_cpus=num_cpus,
        include_dashboard=dashboard,
        dashboard_host=dashboard_host,
        runtime_env=project_runtime_env(local=True, env_vars=env_vars),
        logging_level="WARNING",
        log_to_driver=True,
    )
    if not ray.cluster_resources().get("GPU"):  # Ray's device count: no torch import before Ray starts
        build_cpu_comm_op_once()
    session = ray.get_runtime_context().gcs_address
    LOCAL_STATE.write_text(
        json.dumps(
            {
                "driver_pid": os.getpid(),
                "session_dir": ray._private.worker._global_node.get_session_dir_path(),
                "gcs": session,
            }
        )
    )


def build_cpu_comm_op_once() -> None:
    """For a local Ray without GPUs, build DeepSpeed's CPU communication op now, saying so, if it is not built yet.

    Every CPU rank loads DeepSpeed's shared-memory op; the first load on a machine compiles it
    (about a minute, then cached by torch.utils.cpp_extension). Done here, once, before any trial's
    workers start, the user is told what the wait is, and no trial's setup time includes a compiler run.
    """
    # DeepSpeed would pick its CPU accelerator anyway, but warn that it found no GPU (the ranks are
    # told too: train_run.worker_env).
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    from trainers.quiet import quiet_noise_logs

    quiet_noise_logs()
    from deepspeed.git_version_info import installed_ops
    from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder
    from torch.utils.cpp_extension import _get_build_directory

    builder = ShareMemCommBuilder()
    if installed_ops.get(builder.name) or not builder.is_compatible():
        return  # installed prebuilt with DeepSpeed, or not used on this platform
    # torch's own rule for where load() builds and caches an extension (TORCH_EXTENSIONS_DIR or ~/.cache)
    build_dir = Path(_get_build_directory(builder.name, verbose=False))
    if (build_dir / f"{builder.name}.so").is_file():
        return
    print(
        f"raysweep: building DeepSpeed's CPU communication op once for this machine "
        f"(about a minute; cached in {build_dir})",
        flush=True,
    )
    try:
        builder.load(verbose=False)
    except Exception as e:  # the trials' DeepSpeed would fail the same way, one by one
        raise UsageError(
            f"DeepSpeed's CPU communication op does not build on this machine ({str(e).splitlines()[0]}); "
            "it needs a C++ compiler and ninja (pip install ninja)"
        ) from None


# Where ray.init connects first when the address names no port: the GCS for HOST, the Ray
# Client server for ray://HOST.
GCS_PORT = 6379
RAY_CLIENT_PORT = 10001
# ray.init retries an unreachable GCS for minutes; a TCP connect says within seconds whether
# anything listens there at all.
PROBE_TIMEOUT_S = 5.0


def bootstrap_endpoint(address: str) -> tuple[str, int] | None:
    """The host and port ray.init connects to first; None for ``auto`` (Ray finds the cluster itself)."""
    if address == "auto":
        return None
    client = address.startswith("ray://")
    rest = address.removeprefix("ray://").rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or host.endswith(":"):  # no port, or a bare IPv6 address
        host, port = rest, str(RAY_CLIENT_PORT if client else GCS_PORT)
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--address {address}: expected HOST:PORT or ray://HOST:PORT, e.g. head:6379")
    return host, int(port)


def check_reachable(address: str) -> None:
    """Fail within seconds, naming the address, when nothing listens where ray.init would connect."""
    endpoint = bootstrap_endpoint(address)
    if endpoint is None:
        return
    try:
        socket.create_connection(endpoint, timeout=PROBE_TIMEOUT_S).close()
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        port_kind = "the Ray Client server port (10001)" if address.startswith("ray://") else "the GCS port (6379)"
        raise UsageError(
            f"Ray cluster {address}: nothing answers at {endpoint[0]}:{endpoint[1]} ({reason}); check that the "
            f"cluster's head node is up (`ray status` on it) and that the port is {port_kind} "
            "or the one it was started with"
        ) from None


def join(address: str, env_vars: dict[str, str] | None = None) -> None:
    import ray

    check_reachable(address)
    try:
        ray.init(address=address, runtime_env=project_runtime_env(env_vars=env_vars), logging_level="WARNING")
    except (ConnectionError, ValueError) as e:
        raise UsageError(f"--address {address}: cannot join a Ray cluster there ({e})") from None


# Ray Train settings that cut each trial's fixed cost: the controller notices a finished
# worker group within a quarter second (default: 2 s).
TRAIN_ENV = {"RAY_TRAIN_V2_ENABLED": "1", "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.25"}
# A local instance has no nodes to be preempted: no preemption watcher actor per trial.
LOCAL_TRAIN_ENV = {"RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0"}


def project_runtime_env(local: bool = False, env_vars: dict[str, str] | None = None) -> dict:
    """Ship the project's own packages to every node: nodes need only the dependencies."""
    root = Path(__file__).resolve().parents[2]
    return {
        "py_modules": [str(root / pkg) for pkg in ("raysweep", "trainers")],
        "env_vars": {**TRAIN_ENV, **(LOCAL_TRAIN_ENV if local else {}), **(env_vars or {})},
        # runs in every worker process as it starts: drops the CPU ranks' meaningless start-up lines
        "worker_process_setup_hook": "trainers.quiet.quiet_worker",
    }


def stop_orphaned_local_ray() -> None:
    """A driver killed with SIGKILL leaves its local Ray running; stop that instance's processes."""
    import psutil

    try:
        state = json.loads(LOCAL_STATE.read_text())
    except (OSError, ValueError):
        return
    if psutil.pid_exists(state.get("driver_pid", -1)):
        return  # another sweep is running and owns it
    session_dir = state.get("session_dir") or ""
    if not session_dir:
        return
    victims = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if session_dir in cmdline or os.path.basename(session_dir) in cmdline:
            victims.append(proc)
    for proc in victims:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(victims, timeout=10)
    LOCAL_STATE.unlink(missing_ok=True)


def dashboard_url() -> str | None:
    import ray

    url = getattr(ray._private.worker.global_worker.node, "webui_url", None)
    return f"http://{url}" if url and not url.startswith("http") else url
