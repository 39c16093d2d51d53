# The first trial's start-up on 2 CPU cores, a checkout BASE against this one, alternated: the embedded default with two trials.
# BASE: a checkout of the commit before (git worktree add /work/base 28ddd68); NEW: this checkout; AB: where the runs go.
BASE=${BASE:-/work/base} NEW=${NEW:-$(cd "$(dirname "$0")/../../.." && pwd)} AB=${AB:-/tmp/ab}
export AB
mkdir -p $AB
for i in 1 2 3 4 5 6; do
  order="base new"; [ $i -gt 3 ] && order="new base"   # the second half in the other order, against drift
  for tag in $order; do
    dir=$NEW; [ $tag = base ] && dir=$BASE
    (cd /tmp && PYTHONPATH=$dir timeout 300 python -m raysweep.tune --space batch_grid --no-dashboard --no-report \
      --results-dir $AB/$tag-$i --name s --set 'micro_batch_per_worker=[16,32]' > $AB/$tag-$i.log 2>&1)
    echo "$tag $i rc=$?"
  done
done
python - <<'PY'
import glob, json, os, statistics, pandas as pd
ab = os.environ["AB"]
rows = {"base": [], "new": []}
for tag in rows:
    for i in range(1, 7):
        df = pd.concat(pd.read_parquet(f) for f in glob.glob(f"{ab}/{tag}-{i}/s/trials/*.parquet")).sort_values("started_at")
        eco = json.load(open(f"{ab}/{tag}-{i}/s/sweep.json"))["economy"]
        rows[tag].append((round(float(df.iloc[0]["setup_s"]), 2), round(float(df.iloc[1]["setup_s"]), 2), round(eco["wall_s"], 1), round(eco["duty_cycle"], 3)))
for tag, r in rows.items():
    print(tag, "(first setup_s, second setup_s, wall_s, duty_cycle) per run:", r)
    for k, name in enumerate(("first setup_s", "second setup_s", "wall_s", "duty_cycle")):
        v = [x[k] for x in r]
        print(f"  {name}: median {statistics.median(v)} ({min(v)}-{max(v)})")
print("paired first-trial difference, base - new:", [round(b[0] - n[0], 2) for b, n in zip(rows["base"], rows["new"])])
PY
