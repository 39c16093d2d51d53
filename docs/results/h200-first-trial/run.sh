# H200 run for issue 13 after c7cca5e: issue 13's 3-trial batch_grid, then the cold-process floor on the same host.
set -u
T0=$(date +%s)
timeout 240 python -m raysweep.tune --space batch_grid --model vit_base_patch16_224 --dataset synthetic \
    --set image_size=224 --set 'micro_batch_per_worker=[64,128,256]' --set train_samples=51200 \
    --epochs 1 --set precision=bf16 --no-dashboard --no-report --results-dir $OUT --name h200_first_trial > $OUT/sweep.log 2>&1
echo "sweep rc=$? at $(( $(date +%s) - T0 )) s"; grep -A5 "^trial_id" $OUT/sweep.log; grep "trials in" $OUT/sweep.log | tail -1
for i in 1 2; do timeout 60 python -m raysweep.cold_floor --model vit_base_patch16_224 --batch 256 2>/dev/null | tail -1; done | tee $OUT/floor.log
python - <<'PY'
import glob, json, os, pandas as pd
out = os.environ["OUT"]
df = pd.concat(pd.read_parquet(f) for f in glob.glob(f"{out}/h200_first_trial/trials/*.parquet")).sort_values("started_at")
print(df[["trial_id", "micro_batch_per_worker", "throughput", "setup_s", "teardown_s", "setup_breakdown"]].to_string(index=False))
print(json.load(open(f"{out}/h200_first_trial/sweep.json"))["economy"])
PY
echo "done at $(( $(date +%s) - T0 )) s"
