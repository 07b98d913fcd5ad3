"""Environment settings that PyTorch reads once, when it loads: set here, before it is imported.

oneDNN (PyTorch's CPU kernels for bf16 matrix products) caches a compiled kernel for every new
tensor shape, 1,024 of them by default; with batches of varying shapes that cache grew a bf16
training process by 2 GB in 60 steps on Multi30k. Thirty-two entries hold the few shapes that
a bf16 Transformer step has on a CPU with AMX, where their rows come padded to fixed sizes
(devices.in_row_blocks); there they took about 80 MB more than sixteen (bench/RESULTS.md). A
value the user has set is left alone. `SET_HERE` names the settings made here, so that a
benchmark can run a peer without them.
"""

import os

SETTINGS = {"LRU_CACHE_CAPACITY": "16", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "32"}
SET_HERE = tuple(name for name in SETTINGS if name not in os.environ)
os.environ.update({name: SETTINGS[name] for name in SET_HERE})
