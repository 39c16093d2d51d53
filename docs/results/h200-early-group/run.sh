# H200 run for issue 13: the first trial's worker group started as soon as Ray is up, planning's checks
# while it starts (NEW, this checkout) against the commit before (BASE, .whl/base.tar from `git archive
# ab556b5 raysweep trainers analysis search_spaces pyproject.toml`; a tag named X<n> other than new<n> runs
# .whl/X.tar the same way): issue 13's 3-trial batch_grid in the order ORDER, the cold-process floor before
# (FLOOR=1) or only its imports, to warm the disk caches (WARM=1), ray.train.torch imported beside ray.init
# or after it (OVERLAP=1: init_overlap.py), when each sweep's processes started (TIMELINE=1: timeline.py),
# where the wall time between trials goes (GAPS=1: gaps.py). Each sweep's launch is the shell's clock
# before `python -m raysweep.tune` starts; "from launch" figures run from it to the last trial's end.
# Each sweep's row of table.txt (with its first trial's setup phases, trainers.measure.meter) and of gaps.txt is
# written as soon as it ends, so a call cut short keeps the sweeps it finished; the sweeps' logs and launch
# times go to $LOGS ($OUT by default; LOGS=/tmp/logs keeps $OUT to the device's eight files: they are
# packed into $OUT/logs.tgz).
set -u
T0=$(date +%s)
NEW=$PWD
export LOGS=${LOGS:-$OUT}
mkdir -p $LOGS
for t in .whl/*.tar; do n=$(basename $t .tar); mkdir -p /tmp/$n && tar xf $t -C /tmp/$n; done  # base, and any other
python -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
if [ "${OVERLAP:-0}" = 1 ]; then
  for m in plain thread plain thread; do python docs/results/h200-early-group/init_overlap.py $m 2>/dev/null | tee -a $OUT/overlap.log; done
fi
if [ "${WARM:-0}" = 1 ]; then python -c "import torch, timm, deepspeed, ray.train.torch" > /dev/null 2>&1; fi
if [ "${FLOOR:-0}" = 1 ]; then
  timeout 60 python -m raysweep.cold_floor --model vit_base_patch16_224 --batch 256 2>/dev/null | tail -1 | tee -a $OUT/floor.log
fi
row() {  # $1 tag: its line of table.txt
python - $1 <<'PY' | tee -a $OUT/table.txt
import glob, json, os, sys, pandas as pd
for tag in sys.argv[1:]:
    try:
        df = pd.concat(pd.read_parquet(f) for f in glob.glob(f"/tmp/res/{tag}/s/trials/*.parquet")).sort_values("started_at")
        eco = json.load(open(f"/tmp/res/{tag}/s/sweep.json"))["economy"]
    except Exception as e:
        print(tag, "no result:", e); continue
    launch = float(open(f"{os.environ['LOGS']}/{tag}.launch").read())
    start, end = df.started_at.min().timestamp(), df.finished_at.max().timestamp()
    busy = float(df.timed_s.sum())
    print(tag, "setup_s", [round(x, 2) for x in df.setup_s], "teardown_s", [round(x, 3) for x in df.teardown_s],
          "timed_s", [round(x, 1) for x in df.timed_s], "wall_s", round(eco["wall_s"], 1), "duty", round(eco["duty_cycle"], 3),
          "| launch to first trial", round(start - launch, 1), "launch to first step", round(start - launch + df.setup_s.iloc[0], 1),
          "launch to end", round(end - launch, 1), "duty from launch", round(busy / (end - launch), 3),
          "| first trial's phases", df.setup_breakdown.iloc[0])
PY
}
sweep() {  # $1 tag, $2 checkout
  date +%s.%N > $LOGS/$1.launch
  (cd $2 && timeout 200 python -m raysweep.tune --space batch_grid --model vit_base_patch16_224 --dataset synthetic \
    --set image_size=224 --set 'micro_batch_per_worker=[64,128,256]' --set train_samples=51200 \
    --epochs 1 --set precision=bf16 --no-dashboard --no-report --results-dir /tmp/res/$1 --name s > $LOGS/$1.log 2>&1)
  echo "$1 rc=$? exited $(python -c "print(round($(date +%s.%N)-$(cat $LOGS/$1.launch),1))") s after launch"
  row $1
  if [ "${TIMELINE:-0}" = 1 ]; then python $NEW/docs/results/h200-early-group/timeline.py $1 | tee -a $OUT/timeline.txt; fi
  if [ "${GAPS:-0}" = 1 ]; then python $NEW/docs/results/h200-early-group/gaps.py $1 | tee -a $OUT/gaps.txt; fi
}
for tag in ${ORDER:-base1 new1}; do
  case $tag in new*) sweep $tag $NEW;; *) sweep $tag /tmp/${tag%%[0-9]*};; esac  # base1: .whl/base.tar
done
if [ "$LOGS" != "$OUT" ]; then tar czf $OUT/logs.tgz -C $LOGS .; fi
echo "done at $(( $(date +%s) - T0 )) s"
