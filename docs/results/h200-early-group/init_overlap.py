"""Does importing ray.train.torch on a thread overlap ray.init? `python init_overlap.py {plain,thread}`.

Prints how long after `import ray` the module is ready: plain imports it after ray.init, thread starts
its import on a thread just before ray.init (raysweep.train_run.import_train_torch_in_background).
"""

import importlib
import sys
import threading
import time

t0 = time.time()
import ray  # noqa: E402

t1 = time.time()
if sys.argv[1] == "thread":
    threading.Thread(target=importlib.import_module, args=("ray.train.torch",), daemon=True).start()
ray.init(include_dashboard=False, logging_level="WARNING")
t2 = time.time()
import ray.train.torch  # noqa: E402, F401

t3 = time.time()
print(f"{sys.argv[1]:6s} import ray {t1 - t0:.1f} s, ray.init {t2 - t1:.1f} s, ready {t3 - t1:.1f} s after")
ray.shutdown()
