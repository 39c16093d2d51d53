"""When each of a sweep's processes started, against its launch: `python timeline.py TAG` (run.sh, TIMELINE=1).

Reads the sweep's trials table ($RES/TAG, /tmp/res/TAG by default), its launch time ($LOGS/TAG.launch),
its output ($LOGS/TAG.log; LOGS defaults to $OUT) and Ray's log files: a process's start is the first line
of its core worker's log (`python-core-worker-ID_PID.log`, "Constructing CoreWorkerProcess", stamped in
local time), its name the actor it became (`worker-ID-JOB-PID.out`). Not the `.out` file's ctime: every
later write to it moves that.
"""

import glob
import os
import re
import sys
import time
from datetime import datetime

import pandas as pd

tag, out = sys.argv[1], os.environ.get("LOGS", os.environ["OUT"])
launch = float(open(f"{out}/{tag}.launch").read())
res = os.environ.get("RES", "/tmp/res")
trials = pd.concat(pd.read_parquet(f) for f in glob.glob(f"{res}/{tag}/s/trials/*.parquet"))
first = trials.sort_values("started_at").iloc[0]
start = first.started_at.timestamp()
logs = re.search(r"Ray's logs: (\S+)", open(f"{out}/{tag}.log").read()).group(1)
events = [(start - launch, "Tune starts the first trial"), (start - launch + first.setup_s, "its first step")]
for path in glob.glob(f"{logs}/worker-*.out"):
    names = re.findall(r":actor_name:(\w+)", open(path, errors="replace").read(4000))
    worker_id, pid = re.match(r"worker-(\w+)-\w+-(\d+)\.out", os.path.basename(path)).groups()
    first = open(f"{logs}/python-core-worker-{worker_id}_{pid}.log", errors="replace").readline()
    stamp = datetime.strptime(first[1:24], "%Y-%m-%d %H:%M:%S,%f")
    started = time.mktime(stamp.timetuple()) + stamp.microsecond / 1e6
    events.append((started - launch, f"process started: {names[-1] if names else '(idle worker)'}"))
print(f"{tag}: seconds after launch")
for t, what in sorted(events):
    if "idle worker" not in what:
        print(f"  {t:7.2f}  {what}")
idle = sorted(t for t, what in events if "idle worker" in what)
if idle:
    print(f"  {idle[0]:7.2f}  Ray's first idle worker process ({len(idle)} in all): Ray is up")
