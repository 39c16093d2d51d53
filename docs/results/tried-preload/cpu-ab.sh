. /work/venv/bin/activate  # BASE: git worktree add /work/base f563bb2; NEW: /work/main with the preload
AB=/tmp/ab; mkdir -p $AB
for i in 1 2 3 4; do
  order="base new"; [ $((i % 2)) -eq 0 ] && order="new base"
  for tag in $order; do
    dir=/work/main; [ $tag = base ] && dir=/work/base
    (cd /tmp && PYTHONPATH=$dir timeout 300 python -m raysweep.tune --space batch_grid --no-dashboard --no-report \
      --results-dir $AB/$tag-$i --name s --set 'micro_batch_per_worker=[16,32]' --set epochs=1 > $AB/$tag-$i.log 2>&1)
    echo "$tag $i rc=$?"
  done
done
