# Is a sweep's micro batch 64 trial slower because it runs first in its worker group, or because micro batch
# 64 is CPU-bound on this host? Plain PyTorch at 64 in a fresh process, then sweeps of micro batch [64,256]
# (64 first) and [256,64] (64 second), alternated, 25,600 synthetic samples a trial; each trial's row.
set -u
python - <<'PY' | tee -a $OUT/table.txt
from raysweep.bench import plain_pytorch
for r in (plain_pytorch("vit_base_patch16_224", 64, steps=400, warmup=5) for _ in range(2)):
    print("plain b64", round(r["plain_img_s"], 1), "img/s")
PY
for tag in first1 second1 first2 second2; do
  case $tag in first*) grid='[64,256]';; *) grid='[256,64]';; esac
  timeout 120 python -m raysweep.tune --space batch_grid --model vit_base_patch16_224 --dataset synthetic \
    --set image_size=224 --set "micro_batch_per_worker=$grid" --set train_samples=25600 --epochs 1 \
    --set precision=bf16 --no-dashboard --no-report --results-dir /tmp/res/$tag --name s > $OUT/$tag.log 2>&1
  python - $tag <<'PY' | tee -a $OUT/table.txt
import glob, sys, pandas as pd
tag = sys.argv[1]
df = pd.concat(pd.read_parquet(f) for f in glob.glob(f"/tmp/res/{tag}/s/trials/*.parquet")).sort_values("started_at")
for i, r in enumerate(df.itertuples()):
    print(tag, "trial", i, "mb", r.micro_batch_per_worker, "img/s", round(r.throughput, 1), "step ms", round(r.step_time_ms, 2), "timed_s", round(r.timed_s, 1))
PY
done
