# The first trial's start on 2 CPU cores, a checkout BASE (the commit before) against NEW (this change:
# the first group starts as soon as Ray is up), alternated: the embedded default with two trials.
# Each run's launch is the shell's clock before `python -m raysweep.tune` starts. SETS='' runs the embedded
# default's five trials instead.
BASE=${BASE:-/work/base} NEW=${NEW:-$(cd "$(dirname "$0")/../../.." && pwd)} AB=${AB:-/tmp/ab} PAIRS=${PAIRS:-4}
SETS=${SETS-micro_batch_per_worker=[16,32]}
export AB PAIRS
mkdir -p $AB
for i in $(seq 1 $PAIRS); do
  order="base new"; [ $((i % 2)) = 0 ] && order="new base"   # alternate which goes first, against drift
  for tag in $order; do
    dir=$NEW; [ $tag = base ] && dir=$BASE
    date +%s.%N > $AB/$tag-$i.launch
    (cd /tmp && PYTHONPATH=$dir timeout 400 python -m raysweep.tune --space batch_grid --no-dashboard --no-report \
      --results-dir $AB/$tag-$i --name s ${SETS:+--set "$SETS"} > $AB/$tag-$i.log 2>&1)
    echo "$tag $i rc=$? exited $(python -c "print(round($(date +%s.%N)-$(cat $AB/$tag-$i.launch),1))") s after launch"
  done
done
python - <<'PY'
import glob, json, os, statistics, pandas as pd
ab, pairs = os.environ["AB"], int(os.environ["PAIRS"])
names = ("first setup_s", "second setup_s", "duty_cycle", "launch to first step", "launch to end", "duty from launch",
         "later trials' first step (rank's clock)")
rows = {"base": [], "new": []}
for tag in rows:
    for i in range(1, pairs + 1):
        df = pd.concat(pd.read_parquet(f) for f in glob.glob(f"{ab}/{tag}-{i}/s/trials/*.parquet")).sort_values("started_at")
        launch = float(open(f"{ab}/{tag}-{i}.launch").read())
        start, end = df.started_at.min().timestamp(), df.finished_at.max().timestamp()
        busy = float((df.timed_s * df.num_workers * df.cpus_per_worker).sum())
        cpus = 2.0  # this machine's local Ray: os.cpu_count()
        first, second = float(df.setup_s.iloc[0]), float(df.setup_s.iloc[1])
        later_step = statistics.median(json.loads(b)["first_step"] for b in df.setup_breakdown.iloc[1:])
        rows[tag].append((first, second, busy / ((end - start) * cpus),
                          start - launch + first, end - launch, busy / ((end - launch) * cpus), later_step))
for tag, r in rows.items():
    print(tag)
    for k, name in enumerate(names):
        v = [x[k] for x in r]
        print(f"  {name}: median {statistics.median(v):.3g} ({min(v):.3g}-{max(v):.3g}) runs {[round(x, 3) for x in v]}")
for k, name in enumerate(names):
    print(f"paired {name}, base - new:", [round(b[k] - n[k], 2) for b, n in zip(rows["base"], rows["new"])])
PY
