# H200 run for issue 13 at f563bb2's code: the first trial's setup against the cold-process floor measured on
# the same host (once cold, once warm, once after), issue 13's 3-trial batch_grid twice, and for each sweep
# where its processes started (Ray's worker log files) relative to the first trial's start.
set -u
T0=$(date +%s)
python -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
floor() { timeout 90 python -m raysweep.cold_floor --model vit_base_patch16_224 --batch 256 2>/dev/null | tail -1 | tee -a $OUT/floor.log; }
echo "== floor, first on this host"; floor
echo "== floor, again"; floor
sweep() {  # $1 tag
  date +%s.%N > /tmp/launch-$1
  timeout 250 python -m raysweep.tune --space batch_grid --model vit_base_patch16_224 --dataset synthetic \
    --set image_size=224 --set 'micro_batch_per_worker=[64,128,256]' --set train_samples=51200 \
    --epochs 1 --set precision=bf16 --no-dashboard --no-report --results-dir /tmp/res/$1 --name s > $OUT/$1.log 2>&1
  echo "$1 rc=$? at $(( $(date +%s) - T0 )) s"; grep "trials in" $OUT/$1.log | tail -1
  python - $1 <<'PY' | tee -a $OUT/timeline.txt
import glob, os, re, sys, pandas as pd
tag = sys.argv[1]
launch = float(open(f"/tmp/launch-{tag}").read())
df = pd.concat(pd.read_parquet(f) for f in glob.glob(f"/tmp/res/{tag}/s/trials/*.parquet")).sort_values("started_at")
start = df.iloc[0].started_at.timestamp()
logs = re.search(r"Ray's logs: (\S+)", open(os.environ["OUT"] + f"/{tag}.log").read()).group(1)
print(f"{tag}: CLI launch at {launch - start:+.2f} s from the first trial's start; its first step at {df.iloc[0].setup_s:+.2f} s")
rows = []
for p in glob.glob(logs + "/worker-*.out"):
    names = re.findall(r":actor_name:(\w+)", open(p, errors="replace").read(4000))
    rows.append((os.stat(p).st_ctime - start, names[-1] if names else "(idle worker)"))
for t, name in sorted(rows):
    print(f"   {t:+7.2f} s  process started: {name}")
PY
}
sweep s1; sweep s2
echo "== floor, after the sweeps"; floor
python - <<'PY' | tee $OUT/table.txt
import glob, json, pandas as pd
for tag in ("s1", "s2"):
    try:
        df = pd.concat(pd.read_parquet(f) for f in glob.glob(f"/tmp/res/{tag}/s/trials/*.parquet")).sort_values("started_at")
        eco = json.load(open(f"/tmp/res/{tag}/s/sweep.json"))["economy"]
    except Exception as e:
        print(tag, "no result:", e); continue
    print(tag, "setup_s", [round(x, 2) for x in df.setup_s], "teardown_s", [round(x, 3) for x in df.teardown_s],
          "samples/s", [round(x) for x in df.throughput], "timed_s", [round(x, 1) for x in df.timed_s],
          "trial_wall_s", [round(x, 1) for x in df.trial_wall_s], "wall_s", round(eco["wall_s"], 1), "duty", round(eco["duty_cycle"], 3))
    print("   first trial", df.iloc[0].setup_breakdown)
PY
echo "done at $(( $(date +%s) - T0 )) s"
