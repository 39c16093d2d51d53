"""The sweep-level gauges on Ray's metrics endpoint, and where to watch a sweep besides the terminal."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from raysweep.core.paths import shell_path


@dataclass
class SweepCounts:
    total: int
    completed: int = 0
    failed: int = 0
    stopped: int = 0  # stopped early by the sweep's scheduler
    running: int = 0
    best_throughput: float | None = None
    best_value: float | None = None  # the best reported value of the sweep's metric (raysweep.progress)
    done_fraction: float = 0.0  # finished trials count 1, running ones the share of their epochs done

    @property
    def finished(self) -> int:
        return self.completed + self.failed + self.stopped

    @property
    def pending(self) -> int:
        return max(0, self.total - self.finished - self.running)


class SweepMetrics:
    """Sweep-level gauges (trials by state, best throughput) exported from the CLI's process.

    Created in ``start``, once Ray is up; where this process cannot export metrics (a Ray
    Client connection) they are skipped with a note and the sweep goes on.
    """

    def __init__(self):
        self.gauges: dict | None = None
        self.failed = False

    def start(self, sweep: str) -> None:
        if self.gauges is not None or self.failed:
            return
        try:
            from ray.util.metrics import Gauge

            tags = {"sweep": sweep}
            self.gauges = {
                name: Gauge(f"raysweep_sweep_{name}", doc, ("sweep",)).set_default_tags(tags)
                for name, doc in (
                    ("trials_total", "Trials in the sweep"),
                    ("trials_completed", "Trials that completed"),
                    ("trials_failed", "Trials that failed or ended early"),
                    ("trials_running", "Trials running now"),
                    ("trials_pending", "Trials not started yet"),
                    ("best_samples_per_second", "Best trial throughput so far"),
                )
            }
        except Exception as e:  # e.g. Ray Client: metrics need a local core worker
            self.failed = True
            print(f"raysweep: sweep metrics not exported: {e}", file=sys.stderr)

    def publish(self, counts: SweepCounts) -> None:
        if not self.gauges:
            return
        values = {
            "trials_total": counts.total,
            "trials_completed": counts.completed,
            "trials_failed": counts.failed,
            "trials_running": counts.running,
            "trials_pending": counts.pending,
            "best_samples_per_second": counts.best_throughput or 0.0,
        }
        for name, value in values.items():
            self.gauges[name].set(value)

    def __getstate__(self) -> dict:
        return {"gauges": None, "failed": False}


def metrics_urls(nodes: list[dict] | None = None) -> list[str]:
    """Each alive node's Prometheus endpoint (its metrics agent), from ``ray.nodes()`` or ``nodes`` in its form.

    A node whose metrics agent did not start lists port -1 (or none): it has no endpoint to name.
    """
    if nodes is None:
        import ray

        nodes = ray.nodes()
    return [
        f"http://{n['NodeManagerAddress']}:{n['MetricsExportPort']}/metrics"
        for n in nodes
        if n.get("Alive") and (n.get("MetricsExportPort") or 0) > 0
    ]


def watch_hints(sweep_root) -> list[str]:
    """Where to watch the sweep besides this terminal (printed once, as it starts)."""
    logdir = shell_path(Path(sweep_root) / "tensorboard")
    if shutil.which("tensorboard"):
        lines = [f"TensorBoard: tensorboard --logdir {logdir}"]
    else:  # the event files are written either way; the viewer is the user's to install
        lines = [f"TensorBoard: pip install tensorboard, then: tensorboard --logdir {logdir}"]
    try:
        urls = metrics_urls()
    except Exception:  # a client connection may not list nodes' ports; the dashboard still works
        urls = []
    if urls:
        lines.append(f"Prometheus metrics: {' '.join(urls)} (raysweep_* series)")
    return lines
