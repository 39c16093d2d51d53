# GPU run (an H100 here): where a fresh rank's first seconds go (probe.py, profiled and with NCCL's communicator made
# eagerly), the import tree of a rank (python -X importtime), then issue 13's sweep(s) with ORDER
# (docs/results/h200-early-group/run.sh; base: .whl/base.tar).
set -u
mkdir -p /tmp/logs
export DS_ACCELERATOR=cuda LOGS=/tmp/logs
python -c "import torch, timm, deepspeed, ray.train.torch" > /dev/null 2>&1  # the disk caches
python -X importtime -c "import torch, ray.train.torch, timm, deepspeed, trainers.train_loop" 2> /tmp/logs/importtime.txt > /dev/null
awk -F'|' '{n=$3; gsub(/ /,"",$2); match(n,/^ */); if (RLENGTH<=5) print $2, n}' /tmp/logs/importtime.txt | sort -n -r | head -25
P=docs/results/h100-first-step/probe.py
for i in 1 2; do PORT=2960$i python $P --profile 2> /tmp/logs/profile$i.txt | tee -a $OUT/probe.log; done
for i in 3; do PORT=2961$i python $P --eager 2> /tmp/logs/eager$i.txt | tee -a $OUT/probe.log; PORT=2962$i python $P 2>/dev/null | tee -a $OUT/probe.log; done
GAPS=1 TIMELINE=1 ORDER="${ORDER:-new1}" bash docs/results/h200-early-group/run.sh
