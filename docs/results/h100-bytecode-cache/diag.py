"""Whether this Python keeps bytecode for what a sweep's ranks import, and what raysweep.bytecode_cache decides.

python docs/results/h100-bytecode-cache/diag.py
"""

import os
import sys

from raysweep.bytecode_cache import PACKAGES, bytecode_cache_env, bytecode_is_current, package_dirs

print(
    "dont_write_bytecode",
    sys.dont_write_bytecode,
    "PYTHONDONTWRITEBYTECODE",
    os.environ.get("PYTHONDONTWRITEBYTECODE"),
)
for d in package_dirs((*PACKAGES, "networkx", "jinja2")):
    sources = sorted(d.rglob("*.py"))
    current = sum(bytecode_is_current(s) for s in sources)
    print(f"{d}: {current} of {len(sources)} modules with current bytecode; writable {os.access(d, os.W_OK)}")
print("bytecode_cache_env:", bytecode_cache_env())
