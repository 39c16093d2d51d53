"""When each of a sweep's processes started, against its launch: `python timeline.py TAG` (run.sh, TIMELINE=1).

Reads the sweep's trials table ($RES/TAG, /tmp/res/TAG by default), its launch time ($OUT/TAG.launch), its
output ($OUT/TAG.log) and Ray's worker log files (their creation times, named by the actor each process became).
"""

import glob
import os
import re
import sys

import pandas as pd

tag, out = sys.argv[1], os.environ["OUT"]
launch = float(open(f"{out}/{tag}.launch").read())
res = os.environ.get("RES", "/tmp/res")
trials = pd.concat(pd.read_parquet(f) for f in glob.glob(f"{res}/{tag}/s/trials/*.parquet"))
first = trials.sort_values("started_at").iloc[0]
start = first.started_at.timestamp()
logs = re.search(r"Ray's logs: (\S+)", open(f"{out}/{tag}.log").read()).group(1)
events = [(start - launch, "Tune starts the first trial"), (start - launch + first.setup_s, "its first step")]
for path in glob.glob(f"{logs}/worker-*.out"):
    names = re.findall(r":actor_name:(\w+)", open(path, errors="replace").read(4000))
    events.append((os.stat(path).st_ctime - launch, f"process started: {names[-1] if names else '(idle worker)'}"))
print(f"{tag}: seconds after launch")
for t, what in sorted(events):
    if "idle worker" not in what:
        print(f"  {t:7.2f}  {what}")
idle = sorted(t for t, what in events if "idle worker" in what)
if idle:
    print(f"  {idle[0]:7.2f}  Ray's first idle worker process ({len(idle)} in all): Ray is up")
