"""Watching a sweep: its Ray dashboard and Prometheus metrics while it runs, in a real headless
Chromium; its TensorBoard files and its report page after it ends.

One small CPU sweep runs in the background for the whole module; each test waits for the
moment it needs (a trial running, the sweep finished).  Screenshots go to the test's tmp dir,
and also to $RAYSWEEP_SCREENSHOT_DIR when set (docs/images/ holds the README's copies).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest

from analysis import analyze
from tests.integration.conftest import REPO, table

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install -y chromium, as .ci/run does)"
)
NAME = "watch"
EPOCHS = 4
MICRO_BATCHES = (16, 32)


class BackgroundSweep:
    """``python -m raysweep.tune`` started with Popen, its output going to a file we can read as it runs."""

    def __init__(self, results: Path):
        self.results, self.log = results, results / "cli.log"
        results.mkdir(parents=True, exist_ok=True)
        # The dashboard's modules may take longer than Ray's 30 s to start on a busy 2-core machine.
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT": "180"}
        # Headless Chromium cannot type the token the dashboard asks for under Ray's token authentication
        # (raysweep's default, tests/integration/test_security.py): this sweep opts out, as a user may.
        env["RAY_AUTH_MODE"] = "disabled"
        env.pop("RAY_ADDRESS", None)
        argv = [
            sys.executable, "-m", "raysweep.tune", "--space", "batch_grid", "--repeats", "1",
            "--results-dir", str(results), "--name", NAME, "--epochs", str(EPOCHS),
            "--set", f"micro_batch_per_worker={list(MICRO_BATCHES)}",
            # ~20 s of training a trial: Ray's agent exports a worker's gauges every ~10 s and drops them
            # soon after, and later trials start in about a second (shared workers), so the sweep must
            # still run when the tests that watch it, one after another, get to it
            "--set", "train_samples=8192",
        ]  # fmt: skip
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def root(self) -> Path:
        return self.results / NAME

    def wait_for(self, pattern: str, timeout: float = 300) -> re.Match:
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = re.search(pattern, self.output, re.M)
            if found:
                return found
            if self.proc.poll() is not None:
                pytest.fail(f"sweep exited {self.proc.returncode} before {pattern!r}:\n{self.output[-4000:]}")
            time.sleep(1)
        pytest.fail(f"no {pattern!r} within {timeout} s:\n{self.output[-4000:]}")

    def finish(self, timeout: float = 600) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"sweep still running after {timeout} s:\n{self.output[-4000:]}")
        assert self.proc.returncode == 0, self.output[-6000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # the CLI shuts its local Ray down on the way out
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    running = BackgroundSweep(tmp_path_factory.mktemp("watching"))
    yield running
    running.stop()


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def chromium(
    url: str, tmp: Path, *, dump_dom: bool = False, screenshot: Path | None = None, window: str = "1400,1000"
) -> str:
    """Headless Chromium with nothing but the page: lets the page's scripts run for up to 10 s of virtual time."""
    argv = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
        f"--user-data-dir={tmp / 'chromium-profile'}", "--virtual-time-budget=10000", f"--window-size={window}",
    ]  # fmt: skip
    if screenshot:
        argv.append(f"--screenshot={screenshot}")
    if dump_dom:
        argv.append("--dump-dom")
    proc = subprocess.run([*argv, url], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def keep_screenshot(path: Path, name: str) -> None:
    assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"no screenshot at {path}"
    target = os.environ.get("RAYSWEEP_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / name)


def started_trials(sweep: BackgroundSweep) -> list[str]:
    return re.findall(r"\] trial (\S+) \(w\d+ mb\d+ acc\d+\) started", sweep.output)


# ---- while it runs --------------------------------------------------------------------------


@needs_chromium
def test_dashboard_shows_the_sweep_job_and_its_trial_actors(sweep, tmp_path):
    url = sweep.wait_for(r"^Ray dashboard: (http://127\.0\.0\.1:\d+)", timeout=180).group(1)
    sweep.wait_for(r"\] trial \S+ \(w1 mb16 acc1\) started")

    jobs = [j for j in get_json(f"{url}/api/jobs/") if j.get("type") == "DRIVER" and j.get("status") == "RUNNING"]
    sweep_jobs = [
        j for j in jobs if "raysweep.tune" in (j.get("entrypoint") or "") and f"--name {NAME}" in j["entrypoint"]
    ]
    assert len(sweep_jobs) == 1, jobs
    job_id = sweep_jobs[0]["job_id"]

    # The trial's actors: Tune's trainable (ImplicitFunc, listed with its qualified name), the shared
    # worker group that runs it, Ray Train's controller and its worker.
    wanted, classes = {"ImplicitFunc", "TrialGroup", "TrainController", "RayTrainWorker"}, set()
    deadline = time.time() + 120
    while time.time() < deadline and not wanted <= classes and sweep.proc.poll() is None:
        actors = get_json(f"{url}/api/v0/actors?limit=1000&detail=false")["data"]["result"]["result"]
        alive = (a for a in actors if a["state"] == "ALIVE" and a.get("job_id") == job_id)
        classes = {a["class_name"].rsplit(".", 1)[-1] for a in alive}
        time.sleep(2)
    assert wanted <= classes, f"alive actors of job {job_id}: {classes}"

    page = tmp_path / "dashboard.png"
    dom = chromium(f"{url}/#/actors", tmp_path, dump_dom=True)
    assert "RayTrainWorker" in dom or "TrainController" in dom, dom[-3000:]
    chromium(f"{url}/#/actors", tmp_path, screenshot=page)
    keep_screenshot(page, "dashboard.png")


def test_metrics_endpoint_exports_trial_and_sweep_metrics(sweep):
    from prometheus_client.parser import text_string_to_metric_families

    endpoint = sweep.wait_for(r"^Prometheus metrics: (http://\S+/metrics)", timeout=180).group(1)
    sweep.wait_for(r"\] trial \S+ \(w1 mb\d+ acc1\) started")
    wanted = {
        "ray_raysweep_trial_samples_per_second",
        "ray_raysweep_trial_epoch",
        "ray_raysweep_trial_step_time_ms",
        "ray_raysweep_trial_peak_memory_gib",
        "ray_raysweep_sweep_trials_total",
        "ray_raysweep_sweep_trials_running",
    }
    seen: dict[str, list] = {}
    # Ray's agent exports every ~10 s and drops a worker's gauges soon after it ends: poll while trials run.
    deadline = time.time() + 240
    refused = None
    while time.time() < deadline and not wanted <= seen.keys() and sweep.proc.poll() is None:
        try:
            text = get_text(endpoint)
        except urllib.error.URLError as error:  # the node lists its port before its agent listens on it
            refused = error
            time.sleep(2)
            continue
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in wanted and sample.labels.get("sweep") == NAME:
                    seen.setdefault(sample.name, []).append(sample)
        time.sleep(2)
    assert wanted <= seen.keys(), (
        f"missing {wanted - seen.keys()} (last refusal: {refused}); output:\n{sweep.output[-3000:]}"
    )

    trials = set(started_trials(sweep))
    for name in ("ray_raysweep_trial_samples_per_second", "ray_raysweep_trial_epoch"):
        assert all(s.labels["trial_id"] in trials and s.value > 0 for s in seen[name]), seen[name]
    for name in ("ray_raysweep_trial_step_time_ms", "ray_raysweep_trial_peak_memory_gib"):
        assert all(s.labels["trial_id"] in trials and s.labels["rank"] == "0" and s.value > 0 for s in seen[name])
    assert {s.value for s in seen["ray_raysweep_sweep_trials_total"]} == {len(MICRO_BATCHES)}


# ---- after it ends ---------------------------------------------------------------------------


def test_progress_log_is_plain_and_tensorboard_has_every_epoch(sweep):
    sweep.finish()
    out = sweep.output
    assert "\x1b" not in out and "\r" not in out  # a plain log: no colour codes, no redrawn lines
    assert re.search(rf"^\[{NAME} \S+\] sweep finished \| 2/2 done \(2 completed, 0 failed\)", out, re.M), out[-3000:]
    assert f"tensorboard --logdir {sweep.root / 'tensorboard'}" in out  # as printed (outside the cwd: absolute)

    epochs = table(sweep.root, "epochs").to_pylist()
    trials = {r["trial_id"]: r for r in table(sweep.root, "trials").to_pylist()}
    runs = sorted(p.name for p in (sweep.root / "tensorboard").iterdir())
    assert runs == sorted(f"{tid}-w1-mb{r['micro_batch_per_worker']}-acc1" for tid, r in trials.items())
    for run in runs:
        scalars = read_scalars(sweep.root / "tensorboard" / run)
        for tag in ("train_loss", "val_accuracy", "throughput", "step_time_ms", "rank0/peak_mem_gib"):
            assert sorted(scalars.get(tag, {})) == list(range(EPOCHS)), (run, tag, sorted(scalars))
        tid = run.split("-")[0]
        for row in (e for e in epochs if e["trial_id"] == tid):
            assert scalars["throughput"][row["epoch"]] == pytest.approx(row["throughput"], rel=1e-5)
        assert scalars["setup_s"] == {EPOCHS - 1: pytest.approx(trials[tid]["setup_s"], rel=1e-5)}
    # Tune's own TensorBoard logger is off: one run per trial, not two.
    assert not list((sweep.root / "_tune").rglob("events.out.tfevents*"))


def read_scalars(run_dir: Path) -> dict[str, dict[int, float]]:
    """tag -> {step: value} from a run's event files (TFRecord framing around tensorboard Event protos)."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, dict[int, float]] = {}
    for path in sorted(run_dir.glob("events.out.tfevents.*")):
        data, i = path.read_bytes(), 0
        while i < len(data):
            (length,) = struct.unpack("<Q", data[i : i + 8])
            event = event_pb2.Event.FromString(data[i + 12 : i + 12 + length])  # after length and its CRC
            i += 12 + length + 4  # and the data's CRC
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    return scalars


class Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images: list[dict] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


@needs_chromium
def test_report_page_fits_1280_px_and_decodes_every_plot(sweep, tmp_path):
    """The module's sweep's report, written again from its tables: no sideways page scroll at 1280 px wide,
    every plot embedded and decoded, nothing fetched."""
    sweep.finish()
    html_path = analyze(sweep.root).parent / "report.html"

    # A copy with a probe: once the page has loaded, each image records the width Chromium decoded and the
    # body records the page's scroll width against the window's.
    probe = tmp_path / "report-probe.html"
    probe.write_text(
        html_path.read_text() + "<script>window.addEventListener('load', () => { for (const i of document.images) "
        "i.setAttribute('data-decoded-width', i.complete ? i.naturalWidth : -1); "
        "document.body.setAttribute('data-scroll-width', document.scrollingElement.scrollWidth); "
        "document.body.setAttribute('data-inner-width', window.innerWidth); "
        "document.body.setAttribute('data-probed', 'yes'); });</script>"
    )
    dom = chromium(probe.as_uri(), tmp_path, dump_dom=True, window="1280,1000")
    assert 'data-probed="yes"' in dom, dom[-2000:]
    scroll = int(re.search(r'data-scroll-width="(\d+)"', dom).group(1))
    inner = int(re.search(r'data-inner-width="(\d+)"', dom).group(1))
    assert inner == 1280 and scroll <= inner, f"the page scrolls sideways: {scroll} px wide in a {inner} px window"
    parser = Images()
    parser.feed(dom)
    assert parser.images, "the report has no plots"
    for img in parser.images:
        src = img.get("src", "")
        assert src.startswith("data:image/png;base64,"), src[:80]  # self-contained: nothing to fetch
        width, height = png_size(base64.b64decode(src.split(",", 1)[1]))
        assert width > 100 and height > 100
        assert int(img["data-decoded-width"]) == width > 0, img.get("alt")

    page = tmp_path / "report.png"
    chromium(html_path.as_uri(), tmp_path, screenshot=page, window="1280,1400")  # the one-screen summary
    keep_screenshot(page, "report.png")
