# H200 run for issue 14, after the thread reader: later-trial setup on the pixel copy against synthetic
# (shared worker groups), and nvJPEG against CPU decode through the full stack with the one-gather crop.
set -u
T0=$(date +%s)
python3 .whl/mkjpeg.py /tmp/jpeg 50000 2>&1 | tail -1
timeout 200 python -c "
import time
from trainers.data.imagefolder import index_imagefolder
from trainers.data.pixel_copy import pixel_copy
from trainers.data.prepared import prepare_imagefolder
t = time.perf_counter(); pixel_copy('/tmp/jpeg', index_imagefolder('/tmp/jpeg'), 224, 3, 15); print('pixel copy built in', round(time.perf_counter() - t, 1), 's')
t = time.perf_counter(); prepare_imagefolder('/tmp/jpeg', workers=15); print('JPEG copy built in', round(time.perf_counter() - t, 1), 's')
" 2>&1 | grep -v Warn | tail -2
echo "copies built at $(( $(date +%s) - T0 )) s"
common="--space batch_grid --model vit_base_patch16_224 --set data_dir=/tmp/jpeg --set image_size=224
  --set micro_batch_per_worker=256 --set train_samples=51200 --epochs 1 --set precision=bf16
  --set cpus_per_worker=15 --no-dashboard --no-report --results-dir $OUT"
timeout 200 python -m raysweep.tune $common --set 'dataset=[synthetic,imagefolder]' --set prepare=pixels \
  --name h200_pixels_shared > $OUT/pixels_shared.log 2>&1
echo "pixels sweep rc=$? at $(( $(date +%s) - T0 )) s"; grep -A6 "^trial_id" $OUT/pixels_shared.log; tail -3 $OUT/pixels_shared.log
timeout 280 python -m raysweep.tune $common --set 'dataset=[synthetic,imagefolder]' --set 'decode=[gpu,cpu]' \
  --name h200_decode_shared > $OUT/decode_shared.log 2>&1
echo "decode sweep rc=$? at $(( $(date +%s) - T0 )) s"; grep -A8 "^trial_id" $OUT/decode_shared.log; tail -3 $OUT/decode_shared.log
python - <<'PY'
import glob, os, pandas as pd
out = os.environ["OUT"]
for name in ("h200_pixels_shared", "h200_decode_shared"):
    files = glob.glob(f"{out}/{name}/trials/*.parquet")
    if not files:
        continue
    df = pd.concat(pd.read_parquet(f) for f in files).sort_values("started_at")
    cols = [c for c in ("trial_id", "dataset", "prepare", "decode", "throughput", "data_wait_fraction", "setup_s", "setup_breakdown") if c in df]
    print(name); print(df[cols].to_string(index=False))
PY
echo "done at $(( $(date +%s) - T0 )) s"
