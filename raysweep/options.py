"""How a sweep runs (not what its trials run): the Python API's keywords, which the CLI's flags fill."""

from __future__ import annotations

import os
from dataclasses import dataclass

from raysweep.core.errors import UsageError
from raysweep.core.names import did_you_mean
from raysweep.planning.max_batch import SearchLimits
from raysweep.progress import PROGRESS_STYLES
from raysweep.watch.trackers import check_trackers

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class SweepOptions:
    results_dir: str = "./raysweep-results"
    name: str | None = None  # default: <space>-<YYYYmmdd-HHMMSS>
    address: str | None = None  # join this Ray cluster; None starts a local one
    max_concurrent_trials: int = 0  # 0 = as many as fit
    max_failures: int = 0  # restarts of a trial's worker group after a worker dies
    collective_timeout: int = 600  # seconds before a hung collective fails a trial
    dashboard: bool = True
    dashboard_host: str = "127.0.0.1"
    report: bool = True
    share_workers: bool = True  # trials of one shape reuse a worker group (raysweep.runtime.worker_groups)
    log_to: tuple[str, ...] = ()  # experiment trackers: mlflow, wandb
    retry_failed: bool = False  # resume only: run failed trials again
    command: tuple[str, ...] = ()  # what started the sweep, recorded in sweep.json
    find_max_batch: SearchLimits | None = None  # search each configuration's largest micro batch first; None = no
    probe_links: bool = False  # time the cluster's collectives before the trials (<sweep>/links/links.parquet)
    progress: str = "lines"  # how the terminal shows the sweep: lines, bar or quiet (raysweep.progress)

    def check(self) -> None:
        """Refuse bad options with the messages the CLI prints (they name the flag)."""
        for flag in ("max_concurrent_trials", "max_failures"):
            if getattr(self, flag) < 0:
                raise UsageError(f"--{flag.replace('_', '-')} must be >= 0, got {getattr(self, flag)}")
        if self.collective_timeout <= 0:
            raise UsageError(
                f"--collective-timeout must be a positive number of seconds, got {self.collective_timeout}"
            )
        if self.dashboard_host not in LOOPBACK and os.environ.get("RAY_AUTH_MODE") != "token":
            raise UsageError(
                f"--dashboard-host {self.dashboard_host} would expose the Ray dashboard beyond this machine without "
                "authentication; turn on Ray's token authentication first (export RAY_AUTH_MODE=token) or keep "
                "127.0.0.1"
            )
        if self.progress not in PROGRESS_STYLES:
            hint = did_you_mean(self.progress, PROGRESS_STYLES)
            raise UsageError(f"--progress must be one of {', '.join(PROGRESS_STYLES)}, got {self.progress!r}{hint}")
        check_trackers(list(self.log_to))
