"""The Ray cluster a sweep runs on: start a private local instance or join one, and end it cleanly.

A local instance is private: every process of it listens on loopback only, and it runs with Ray's
token authentication on (``private_local_ray``).  Every process of it carries its driver's mark in
its environment (``OWNER_ENV``), so that the driver's end (``shutdown``) ends them all, and a later
run ends those of a driver that was killed (``stop_orphaned_local_ray``) and never a live sweep's.
Before anything starts, a joined cluster's address must answer (``check_reachable``), and a cluster of
another Ray version than the driver's is refused in one line naming both (``version_mismatch``).  What fits on
the cluster is ``raysweep.runtime.capacity``'s.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from raysweep.core.errors import UsageError
from raysweep.runtime.caches.cpu_comm_op import build_cpu_comm_op_once

# In the environment of every process of a local Ray that raysweep started (its children inherit it):
# "<driver pid>:<driver start time>", the process that owns them.
OWNER_ENV = "RAYSWEEP_LOCAL_RAY_OWNER"


# Ray waits a fixed 30 s for a new node's raylet to register with its GCS, then fails ray.init with this: on a small
# machine under load the raylet can miss that, and a second start usually makes it.
STARTUP_TIMED_OUT = "timed out during startup"


def start_local(
    num_cpus: int, dashboard_host: str = "127.0.0.1", dashboard: bool = True, env_vars: dict[str, str] | None = None
) -> None:
    """A fresh, private local Ray instance; first end one that a killed raysweep driver left behind.
    ``env_vars``: more environment for every process of the sweep
    (``raysweep.runtime.caches.bytecode_cache.bytecode_cache``'s). A start whose raylet did not register in time
    is ended, every process of it, and tried once more."""
    try:
        start_local_instance(num_cpus, dashboard_host, dashboard, env_vars)
    except Exception as failed:
        if STARTUP_TIMED_OUT not in str(failed):
            raise
        print(
            "raysweep: the local Ray did not start within Ray's 30 s (a busy machine?); starting it again",
            file=sys.stderr,
        )
        shutdown()
        start_local_instance(num_cpus, dashboard_host, dashboard, env_vars)


def start_local_instance(num_cpus: int, dashboard_host: str, dashboard: bool, env_vars: dict[str, str] | None) -> None:
    if dashboard:
        require_dashboard_packages()
    stop_orphaned_local_ray()
    private_local_ray()
    os.environ[OWNER_ENV] = owner_mark(os.getpid())
    import ray

    # Ray Train's PlacementGroupCleaner (a detached actor, one per run) asks Ray's State API whether the run's
    # controller lives, and that API finds "the" cluster as a new driver does: RAY_ADDRESS, else the cluster
    # `ray start` last recorded on this machine, else the only GCS running here.  With another Ray on the
    # machine (a second sweep, a `ray start` cluster) it asks that one, finds no such controller and removes
    # a running trial's placement group, or fails on "multiple active Ray instances".  So this Ray's GCS
    # listens on a port chosen here, and every process of it is told that address.
    gcs_port = free_port()
    env_vars = {**(env_vars or {}), "RAY_ADDRESS": f"127.0.0.1:{gcs_port}"}  # the node address: private_local_ray

    # On a small, busy machine the dashboard's modules can take longer than Ray's 30 s to come up,
    # and then ray.init fails the whole sweep; give them time.
    os.environ.setdefault("RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT", "180")
    # Ray starts one idle worker process per CPU for the first driver, with no runtime environment;
    # every process of a sweep has the project's (project_runtime_env), so none of them is ever used,
    # and their start (an import of Ray each) competes for the CPUs with the first group's.
    os.environ.setdefault("RAY_prestart_worker_first_driver", "0")
    # A terminal's Ctrl-C reaches its whole process group, the local Ray's processes too; they inherit
    # ignoring it (Python then installs no KeyboardInterrupt handler either), so that a Ctrl-C stops the
    # sweep through its driver (raysweep.interrupt) instead of failing the trials in flight.
    with sigint_ignored_by_children(), environment_set(GCS_PORT_ENV, str(gcs_port)):
        ray.init(
            address="local",
            num_cpus=num_cpus,
            include_dashboard=dashboard,
            dashboard_host=dashboard_host,
            # Without its dashboard Ray still records the default port's address as the dashboard's, where another
            # Ray's dashboard may answer that same State API (knowing none of this Ray's actors): a free port
            # instead, one that no other process's bind to "any port" can be given meanwhile.
            dashboard_port=None if dashboard else free_port_outside_ephemeral(),
            runtime_env=project_runtime_env(local=True, env_vars=env_vars),
            logging_level="WARNING",
            log_to_driver=True,
        )
    record_local_ray(ray._private.worker._global_node.get_session_dir_path())
    if not ray.cluster_resources().get("GPU"):  # Ray's device count: no torch import before Ray starts
        build_cpu_comm_op_once()


def require_dashboard_packages() -> None:
    """One line, before Ray starts, where Ray's dashboard cannot: Ray installed without its ``default`` extra
    (aiohttp and the rest) fails ``ray.init`` with a traceback otherwise."""
    try:
        import ray.dashboard.optional_deps  # noqa: F401  what Ray imports to decide whether it can start one
    except ImportError as missing:
        raise UsageError(
            f"Ray's dashboard needs its packages ({missing.name or missing}): pip install 'ray[default]', "
            "or pass --no-dashboard"
        ) from None


# Where a head node's GCS listens, read by Ray as it starts one (ray._private.node); 0 or unset: any free port.
GCS_PORT_ENV = "RAY_GCS_SERVER_PORT"


def free_port() -> int:
    """A TCP port of the loopback address that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Where Linux says which ports it hands to binds of port 0 (other processes', Ray's own included).
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port_outside_ephemeral() -> int:
    """A free loopback port below the system's ephemeral range: a port Ray only records (it binds nothing there)
    stays free, where a free ephemeral port may be handed to another process's next bind."""
    try:
        low = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return free_port()
    for port in random.sample(range(max(1024, low - 8192), low), 64):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return free_port()


@contextmanager
def environment_set(name: str, value: str) -> Iterator[None]:
    """``name=value`` in this process's environment for the block only (its children started there keep it)."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@contextmanager
def sigint_ignored_by_children() -> Iterator[None]:
    """SIGINT ignored while the processes the block starts inherit it (only the main thread sets handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def private_local_ray() -> None:
    """Make the local Ray about to start reachable from this machine only, and only with its token.

    Ray binds a node's servers to its node address, and on Linux takes the machine's network address for
    it; without multi-node clustering (what Ray does on macOS and Windows) the node address is 127.0.0.1,
    and every server of it (GCS, raylet, workers, agents, metrics) listens there.  Token authentication
    (Ray's ``RAY_AUTH_MODE=token``) refuses any driver or request without the token, which a local
    ``ray.init`` reads from Ray's usual sources (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``,
    ``~/.ray/auth_token``); where there is none it is made here, readable by this user only (Ray's own
    would be readable by all).  Ray reads both settings as it is imported: the processes it starts
    inherit them, and this process's Ray, if imported already, is told to read them again.
    """
    PRIVATE_ENV_BEFORE.update({name: os.environ.get(name) for name in PRIVATE_SETTINGS})
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    reread_ray_settings()
    ensure_private_token()


PRIVATE_SETTINGS = ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE")
# Their values before private_local_ray, restored when its Ray ends: a process that goes on (a notebook,
# a test session) joins or starts its next cluster as it would have.
PRIVATE_ENV_BEFORE: dict[str, str | None] = {}


def reread_ray_settings() -> None:
    """This process's Ray reads the settings above again (it read them as it was imported)."""
    from ray._private import ray_constants
    from ray._raylet import AuthenticationTokenLoader, Config

    ray_constants.ENABLE_RAY_CLUSTER = ray_constants.env_bool(
        ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR, not ray_constants.IS_WINDOWS_OR_OSX
    )  # as Ray computes it
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def restore_environment() -> None:
    if not PRIVATE_ENV_BEFORE:
        return
    for name, value in PRIVATE_ENV_BEFORE.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    PRIVATE_ENV_BEFORE.clear()
    reread_ray_settings()


def ensure_private_token() -> None:
    """Ray's default token file, made readable by this user only, where token auth is on and no token exists."""
    from ray._private.authentication.authentication_token_generator import generate_new_authentication_token
    from ray._raylet import AuthenticationMode, AuthenticationTokenLoader, get_authentication_mode

    loader = AuthenticationTokenLoader.instance()
    if get_authentication_mode() != AuthenticationMode.TOKEN or loader.has_token(ignore_auth_mode=True):
        return
    path = Path.home() / ".ray" / "auth_token"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(generate_new_authentication_token())
    loader.reset_cache()


def token_auth_on() -> bool:
    """Whether this process's Ray sends and demands the token (``RAY_AUTH_MODE=token``)."""
    from ray._raylet import AuthenticationMode, get_authentication_mode

    return get_authentication_mode() == AuthenticationMode.TOKEN


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


TOKEN_SOURCES = (
    "RAY_AUTH_MODE=token and the cluster's token in ~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH"
)


def join(address: str, env_vars: dict[str, str] | None = None) -> None:
    """Connect to the cluster at ``address``; warn, once, when it takes orders without a token."""
    import ray
    from ray.exceptions import AuthenticationError

    check_reachable(address)
    endpoint = bootstrap_endpoint(address)
    if endpoint and not address.startswith("ray://"):
        # as a local Ray's (start_local): the cluster's processes that look for "the" cluster find this one
        host, port = endpoint
        env_vars = {**(env_vars or {}), "RAY_ADDRESS": f"[{host}]:{port}" if ":" in host else f"{host}:{port}"}
    try:
        ray.init(address=address, runtime_env=project_runtime_env(env_vars=env_vars), logging_level="WARNING")
    except RuntimeError as e:
        mismatch = version_mismatch(address, str(e))
        if mismatch is None:
            raise
        raise UsageError(mismatch) from None
    except (AuthenticationError, ConnectionError, ValueError) as e:
        # A cluster with token authentication refuses a driver without its token as a failed connection.
        hint = "" if token_auth_on() else f"; if it uses token authentication, give this driver {TOKEN_SOURCES}"
        raise UsageError(f"--address {address}: cannot join a Ray cluster there ({e}){hint}") from None
    if not token_auth_on():  # a cluster with token authentication would have refused this driver
        print(unauthenticated_warning(address), file=sys.stderr)


# How ray.init refuses a driver whose Ray or Python version differs from the cluster's (a RuntimeError of
# ray._private.utils.check_version_info, for a driver and for a Ray Client alike).
VERSION_MISMATCH = re.compile(
    r"Version mismatch: The cluster was started with:\s+Ray: (?P<cluster_ray>\S+)\s+Python: (?P<cluster_python>\S+)"
    r"\s+This process .*? was started with:\s+Ray: (?P<ray>\S+)\s+Python: (?P<python>\S+)",
    re.DOTALL,
)


def version_mismatch(address: str, message: str) -> str | None:
    """Ray's many-line refusal of a driver of another Ray (or Python) version than the cluster's, as one line
    naming both and what to install; None for any other message."""
    found = VERSION_MISMATCH.search(message)
    if found is None:
        return None
    theirs, ours, fixes = [], [], []
    if found["cluster_ray"] != found["ray"]:
        theirs.append(f"Ray {found['cluster_ray']}")
        ours.append(f"Ray {found['ray']}")
        fixes.append(f"install ray=={found['cluster_ray']} here")
    if found["cluster_python"] != found["python"]:
        theirs.append(f"Python {found['cluster_python']}")
        ours.append(f"Python {found['python']}")
        fixes.append(f"run this driver with Python {found['cluster_python']}")
    return f"the cluster at {address} runs {' on '.join(theirs)}; this driver has {' on '.join(ours)}: " + " and ".join(
        fixes
    )


def unauthenticated_warning(address: str) -> str:
    return (
        f"raysweep: warning: the Ray cluster at {address} runs without token authentication: anyone who can "
        "reach its ports can run code on it; start it with RAY_AUTH_MODE=token and join with "
        f"{TOKEN_SOURCES}"
    )


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


def owner_mark(pid: int) -> str:
    """``OWNER_ENV``'s value for the process ``pid``: its start time tells it from a later one of that pid."""
    import psutil

    return f"{pid}:{psutil.Process(pid).create_time():.2f}"


def alive(mark: str) -> bool:
    import psutil

    pid, _, _ = mark.partition(":")
    try:
        return pid.isdigit() and owner_mark(int(pid)) == mark
    except psutil.Error:
        return False


def local_ray_processes(owned_by) -> list:
    """The processes of the local Rays whose mark satisfies ``owned_by``: those with the mark in their
    environment and every process under them (never this process).

    A process that renames itself (Ray's workers, agents and dashboard modules) overwrites its
    environment's memory, so the mark is read where Ray's own processes keep it (the GCS, the raylet,
    the dashboard, the log monitor), and what they started is found under them.
    """
    import psutil

    found = {}
    for proc in psutil.process_iter():
        try:
            mark = proc.environ().get(OWNER_ENV)
            if mark and owned_by(mark):
                for p in [proc, *proc.children(recursive=True)]:
                    found[p.pid] = p
        except psutil.Error:  # gone, or another user's
            continue
    found.pop(os.getpid(), None)
    return list(found.values())


def own_local_ray() -> list:
    """Every process of the local Ray this process started: its marked processes and all under this one."""
    import psutil

    mark = os.environ.get(OWNER_ENV)
    if not mark:
        return []
    found = {p.pid: p for p in local_ray_processes(lambda other: other == mark)}
    found.update((p.pid, p) for p in psutil.Process().children(recursive=True))
    return list(found.values())


def end(processes: list) -> None:
    import psutil

    for proc in processes:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(processes, timeout=10)


# One file per driver with a local Ray: <pid>.json, its mark and its Ray session's directory.
STATE_DIR = Path(tempfile.gettempdir()) / "raysweep-local-ray"


def record_local_ray(session_dir: str) -> None:
    STATE_DIR.mkdir(exist_ok=True)
    state = {"owner": os.environ[OWNER_ENV], "session_dir": session_dir}
    (STATE_DIR / f"{os.getpid()}.json").write_text(json.dumps(state))


def session_processes(session_dir: str) -> list:
    """This user's processes that name ``session_dir`` or keep a file of it open (Ray's agents keep their
    logs there), and every process under them."""
    import psutil

    found = {}
    for proc in psutil.process_iter():
        try:
            if session_dir in " ".join(proc.cmdline()) or any(
                f.path.startswith(session_dir) for f in proc.open_files()
            ):
                for p in [proc, *proc.children(recursive=True)]:
                    found[p.pid] = p
        except psutil.Error:
            continue
    found.pop(os.getpid(), None)
    return list(found.values())


def stop_orphaned_local_ray() -> None:
    """A driver killed with SIGKILL leaves its local Ray running; end the processes of every such instance.

    Only those whose driver is gone: the local Ray of a sweep still running keeps every process.  Ray's
    reaper ends the GCS and the raylet when their driver dies, which leaves what they started (the agents,
    workers) with neither a parent nor a readable mark: those are found by their session's files.
    """
    orphans = local_ray_processes(lambda mark: not alive(mark))
    for path in STATE_DIR.glob("*.json") if STATE_DIR.is_dir() else []:
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not alive(state.get("owner", "")):
            orphans += session_processes(state.get("session_dir") or "/nonexistent-session")
            path.unlink(missing_ok=True)
    end(orphans)


def shutdown() -> None:
    """Disconnect from Ray; a local instance this process started ends, every process of it.

    ``ray.shutdown`` stops the instance's GCS and raylet; what outlives them (Ray's dashboard modules
    and agents, a Train controller whose run was still starting) is ended here: the processes seen
    before it (a psutil handle ends only the process it was made for, never a later one of its pid).
    """
    import ray

    started = own_local_ray()
    ray.shutdown()
    end(started + own_local_ray())
    os.environ.pop(OWNER_ENV, None)
    (STATE_DIR / f"{os.getpid()}.json").unlink(missing_ok=True)
    restore_environment()


def kill_local_now() -> None:
    """End this process's local Ray at once (an interrupt), without asking Ray."""
    end(own_local_ray())


def dashboard_url() -> str | None:
    import ray

    url = getattr(ray._private.worker.global_worker.node, "webui_url", None)
    return f"http://{url}" if url and not url.startswith("http") else url
