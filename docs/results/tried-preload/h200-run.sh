# H200 run for issue 13: a trial rank's imports preloaded on a thread as its process starts (NEW, this
# checkout) against the commit before (BASE, .whl/base.tar from `git archive f563bb2 raysweep trainers
# analysis search_spaces pyproject.toml`): issue 13's 3-trial batch_grid alternated BASE NEW NEW BASE,
# the cold-process floor before and after. Ray and DeepSpeed are byte-compiled first, as pip does on install.
set -u
T0=$(date +%s)
NEW=$PWD; mkdir -p /tmp/base && tar xf .whl/base.tar -C /tmp/base
S=$(date +%s.%N); python -m compileall -q -j 16 /tmp/site > /dev/null 2>&1
echo "compileall /tmp/site: $(python -c "print(round($(date +%s.%N)-$S,1))") s"
floor() { timeout 60 python -m raysweep.cold_floor --model vit_base_patch16_224 --batch 256 2>/dev/null | tail -1 | tee -a $OUT/floor.log; }
echo "== floor before"; floor
sweep() {  # $1 tag, $2 checkout
  (cd $2 && timeout 140 python -m raysweep.tune --space batch_grid --model vit_base_patch16_224 --dataset synthetic \
    --set image_size=224 --set 'micro_batch_per_worker=[64,128,256]' --set train_samples=51200 \
    --epochs 1 --set precision=bf16 --no-dashboard --no-report --results-dir /tmp/res/$1 --name s > $OUT/$1.log 2>&1)
  echo "$1 rc=$? at $(( $(date +%s) - T0 )) s"; grep "trials in" $OUT/$1.log | tail -1
}
for tag in ${ORDER:-base1 new1 new2 base2}; do
  case $tag in base*) sweep $tag /tmp/base;; *) sweep $tag $NEW;; esac
done
echo "== floor after"; floor
python - <<'PY' | tee $OUT/table.txt
import glob, json, os, pandas as pd
for tag in os.environ.get("ORDER", "base1 new1 new2 base2").split():
    try:
        df = pd.concat(pd.read_parquet(f) for f in glob.glob(f"/tmp/res/{tag}/s/trials/*.parquet")).sort_values("started_at")
        eco = json.load(open(f"/tmp/res/{tag}/s/sweep.json"))["economy"]
    except Exception as e:
        print(tag, "no result:", e); continue
    print(tag, "setup_s", [round(x, 2) for x in df.setup_s], "teardown_s", [round(x, 3) for x in df.teardown_s],
          "samples/s", [round(x) for x in df.throughput], "timed_s", [round(x, 1) for x in df.timed_s],
          "wall_s", round(eco["wall_s"], 1), "duty", round(eco["duty_cycle"], 3))
    print("   first trial", df.iloc[0].setup_breakdown)
PY
echo "done at $(( $(date +%s) - T0 )) s"
