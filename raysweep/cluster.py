"""The Ray cluster a sweep runs on: start or join it, and know what fits on it.

``Capacity`` models each node's CPUs and GPUs; a trial needs one bundle per rank, placed
by its strategy (STRICT_PACK: one node; STRICT_SPREAD: one rank per node).  The sweep
uses it twice: before starting, to reject trials the cluster can never hold, and while
running, to start a pending trial whenever its ranks fit in what is free.

Before anything starts, a joined cluster's address must answer (``check_reachable``) and a
local instance must be able to run every trial's ranks (``check_local_fit``).
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from raysweep.errors import UsageError
from raysweep.params import TrialParams

# The Tune function trainable that drives a trial holds this much CPU; its workers hold the rest.
DRIVER_CPU = 0.01
EPS = 1e-9
LOCAL_STATE = Path(tempfile.gettempdir()) / "raysweep-local-ray.json"


@dataclass(frozen=True)
class Demand:
    cpus_per_rank: float
    gpus_per_rank: float
    ranks: int
    strategy: str

    @classmethod
    def of(cls, params: TrialParams) -> Demand:
        gpus = 1.0 if params.device == "gpu" else 0.0
        return cls(params.cpus_per_worker, gpus, params.num_workers, params.placement_strategy)

    def describe(self) -> str:
        per = f"{self.cpus_per_rank:g} CPU" + (f" + {self.gpus_per_rank:g} GPU" if self.gpus_per_rank else "")
        return f"{self.ranks} x ({per}) {self.strategy}"


@dataclass
class Capacity:
    """Free CPUs and GPUs per node."""

    nodes: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def of_cluster(cls) -> Capacity:
        import ray

        return cls(
            {
                n["NodeID"]: {"CPU": n["Resources"].get("CPU", 0.0), "GPU": n["Resources"].get("GPU", 0.0)}
                for n in ray.nodes()
                if n.get("Alive")
            }
        )

    @property
    def total_gpus(self) -> float:
        return sum(r["GPU"] for r in self.nodes.values())

    def describe(self) -> str:
        # Largest node first: ray.nodes() order varies from call to call, a message should not.
        sizes = sorted(((r["GPU"], r["CPU"]) for r in self.nodes.values()), reverse=True)
        return ", ".join(f"{cpu:g} CPU + {gpu:g} GPU" for gpu, cpu in sizes) or "no nodes"

    def place(self, demand: Demand) -> list[str] | None:
        """The nodes the ranks and then the trial's driver would use, or None if they do not fit now."""
        free = {n: dict(r) for n, r in self.nodes.items()}
        need = {"CPU": demand.cpus_per_rank, "GPU": demand.gpus_per_rank}

        def fits(node: str, times: int = 1) -> bool:
            return all(free[node][k] + EPS >= v * times for k, v in need.items())

        placed: list[str] = []
        for _ in range(demand.ranks):
            if demand.strategy == "STRICT_PACK":  # every rank on the first node that holds them all
                options = placed[:1] or [n for n in free if fits(n, demand.ranks)][:1]
            elif demand.strategy == "STRICT_SPREAD":  # one rank per node, nodes in order
                options = [n for n in free if n not in placed and fits(n)][:1]
            else:  # PACK and SPREAD are best effort: the node with the most CPUs left
                options = sorted((n for n in free if fits(n)), key=lambda n: -free[n]["CPU"])[:1]
            if not options:
                return None
            free[options[0]]["CPU"] -= need["CPU"]
            free[options[0]]["GPU"] -= need["GPU"]
            placed.append(options[0])
        driver = next((n for n in free if free[n]["CPU"] + EPS >= DRIVER_CPU), None)
        return None if driver is None else [*placed, driver]

    def reserve(self, demand: Demand) -> list[str] | None:
        """Take the trial's resources if they fit now; returns the nodes used (ranks, then driver)."""
        placed = self.place(demand)
        if placed is not None:
            self._add(demand, placed, -1.0)
        return placed

    def release(self, demand: Demand, placed: list[str]) -> None:
        self._add(demand, placed, +1.0)

    def _add(self, demand: Demand, placed: list[str], sign: float) -> None:
        *ranks, driver = placed
        for node in ranks:
            self.nodes[node]["CPU"] += sign * demand.cpus_per_rank
            self.nodes[node]["GPU"] += sign * demand.gpus_per_rank
        self.nodes[driver]["CPU"] += sign * DRIVER_CPU


# A local instance runs at most this many ranks per physical core, and its ranks reserve at most
# this many logical CPUs per logical CPU. CPU ranks beyond that only time-share the cores (every
# step slower, the timings meaningless), and thousands of them exhaust memory and the process
# table before a first step: `--set num_workers=4096` would hang rather than fail.
RANKS_PER_CORE = 4


@dataclass(frozen=True)
class MachineSize:
    """The cores of the machine a local instance runs on, and the largest trial it accepts."""

    cores: int  # physical cores
    logical_cpus: int

    @classmethod
    def of_this_machine(cls) -> MachineSize:
        import psutil

        logical = os.cpu_count() or 1
        return cls(psutil.cpu_count(logical=False) or logical, logical)

    @property
    def max_ranks(self) -> int:
        return RANKS_PER_CORE * self.cores

    @property
    def max_rank_cpus(self) -> int:
        return RANKS_PER_CORE * self.logical_cpus

    def ranks_that_fit(self, cpus_per_worker: float) -> int:
        return min(self.max_ranks, int(self.max_rank_cpus / cpus_per_worker + EPS))

    def describe(self) -> str:
        return f"{self.cores} cores ({self.logical_cpus} logical CPUs)"


def check_local_fit(trials: list[TrialParams], machine: MachineSize | None = None) -> None:
    """Refuse, before a local Ray starts, a trial with more ranks or CPUs than the machine can run."""
    machine = machine or MachineSize.of_this_machine()
    for t in trials:
        fit = machine.ranks_that_fit(t.cpus_per_worker)
        if t.num_workers <= fit:
            continue
        advice = (
            f"use --set num_workers={fit} or fewer"
            if fit
            else f"use --set cpus_per_worker={machine.max_rank_cpus} or less"
        )
        raise UsageError(
            f"num_workers={t.num_workers} x cpus_per_worker={t.cpus_per_worker:g} is more than this machine can "
            f"run: it has {machine.describe()}, and a local Ray runs at most {machine.max_ranks} ranks "
            f"({RANKS_PER_CORE} per core) reserving at most {machine.max_rank_cpus} CPUs; {advice}, "
            "or join a bigger cluster with --address"
        )


def local_num_cpus(trials: list[TrialParams]) -> int:
    """Logical CPUs for a local Ray: enough for the largest trial plus its driver, even on 2 cores."""
    largest = max((t.num_workers * t.cpus_per_worker for t in trials), default=1)
    return max(os.cpu_count() or 1, int(-(-largest // 1)) + 1)


def start_local(
    num_cpus: int, dashboard_host: str = "127.0.0.1", dashboard: bool = True, env_vars: dict[str, str] | None = None
) -> None:
    """A fresh local Ray instance; first stop one that a killed raysweep driver left behind. ``env_vars``:
    more environment for every process of the sweep (``raysweep.bytecode_cache.bytecode_cache``'s)."""
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
    root = Path(__file__).resolve().parent.parent
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
