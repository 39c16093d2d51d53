"""What the device warm-up leaves allocated in a fresh process, on its thread and then on the main
thread (where a trial runs): PyTorch keeps a cuBLAS handle per thread and a workspace per handle."""

import time

import torch
from device_warmup import warm_device, warm_device_in_background

device = torch.device("cuda", 0)
torch.zeros(1, device=device)
print("after the context", torch.cuda.memory_allocated(device))
for where in ("a thread", "a second thread", "the main thread", "the main thread again"):
    start = time.perf_counter()
    if where.startswith("the main"):
        warm_device(device)
    else:
        warm_device_in_background(device).join()
    print(f"after {where}: {torch.cuda.memory_allocated(device)} bytes, {time.perf_counter() - start:.2f} s")
