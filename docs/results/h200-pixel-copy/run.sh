# H200 run for issue 14: the pixel copy's pipeline and full stack, beside nvJPEG and CPU decode.
set -u
T0=$(date +%s); left() { echo $(( ${BUDGET:-570} - ($(date +%s) - T0) )); }
nproc; free -g | head -2; df -h /tmp | tail -1; nvidia-smi --query-gpu=name,memory.used --format=csv,noheader
python3 .whl/mkjpeg.py /tmp/jpeg 50000 2>&1 | tail -1
echo "folder made at $(( $(date +%s) - T0 )) s"
timeout 200 python -c "
import time
from trainers.data.imagefolder import index_imagefolder
from trainers.data.pixel_copy import pixel_copy
from trainers.data.prepared import prepare_imagefolder
t = time.perf_counter(); pixel_copy('/tmp/jpeg', index_imagefolder('/tmp/jpeg'), 224, 3, 15); print('pixel copy built in', round(time.perf_counter() - t, 1), 's')
t = time.perf_counter(); prepare_imagefolder('/tmp/jpeg', workers=15); print('JPEG copy built in', round(time.perf_counter() - t, 1), 's')
" 2>&1 | grep -v Warn | tail -3
timeout $(( $(left) - 100 )) python -m raysweep.bench --batches 256 --image-folder /tmp/jpeg --prepared --pixels \
  --loader-workers 14 --no-floor --pipeline-seconds 10 --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"
grep -v "^(\|WARNING\|socket.cpp" $OUT/bench.log | tail -30
# repeats of the pipelines alone, alternated: pixel copy, nvJPEG on the prepared copy
ls /tmp/jpeg/.raysweep-prepared/; P=$(find /tmp/jpeg/.raysweep-prepared -maxdepth 2 -type d -name train | grep -v pixel | head -1 | xargs -r dirname); echo "prepared: $P"
for r in 1 2 3; do
  [ $(left) -lt 65 ] && break
  echo "round $r pixels"; timeout 60 python -m trainers.input_pipeline /tmp/jpeg --pixels --workers 14 --seconds 8 --batch 256 2>&1 | tail -2
  [ $(left) -lt 65 ] && break
  [ -n "$P" ] && { echo "round $r gpu"; timeout 60 python -m trainers.input_pipeline "$P" --decode gpu --workers 14 --seconds 8 --batch 256 2>&1 | tail -2; }
done
du -sh /tmp/jpeg/.raysweep-prepared/* 2>/dev/null
echo "done at $(( $(date +%s) - T0 )) s"
