# H200 run for issue 14: the pixel copy read by threads (read_batches) instead of loader processes.
set -u
T0=$(date +%s); left() { echo $(( ${BUDGET:-570} - ($(date +%s) - T0) )); }
nproc; free -g | head -2; nvidia-smi --query-gpu=name,memory.used --format=csv,noheader
python3 .whl/mkjpeg.py /tmp/jpeg 50000 2>&1 | tail -1
echo "folder made at $(( $(date +%s) - T0 )) s"
# stage by stage, alternated (builds the pixel copy first)
timeout 200 env PYTHONPATH=. python docs/results/h200-pixel-reader/stages.py /tmp/jpeg --workers 14 --batch 256 \
  --seconds 4 --repeats 3 > $OUT/stages.log 2>&1
echo "stages rc=$? at $(( $(date +%s) - T0 )) s"; grep -v "Warn\|warn" $OUT/stages.log | tail -7
for r in 1 2 3; do
  [ $(left) -lt 300 ] && break
  echo "round $r pixels"; timeout 60 python -m trainers.input_pipeline /tmp/jpeg --pixels --workers 14 --seconds 8 --batch 256 2>&1 | tail -1
done | tee $OUT/rounds.log
echo "rounds done at $(( $(date +%s) - T0 )) s"
timeout $(( $(left) - 5 )) python -m raysweep.bench --batches 256 --image-folder /tmp/jpeg --prepared --pixels \
  --loader-workers 14 --no-floor --pipeline-seconds 10 --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"
grep -v "^(\|WARNING\|socket.cpp" $OUT/bench.log | tail -30
echo "done at $(( $(date +%s) - T0 )) s"
