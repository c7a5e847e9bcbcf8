"""Where a controller's seconds before the session go: each step of what configure does, timed in order."""
import time, sys
T = time.perf_counter()
marks = []
def mark(name):
    marks.append((name, time.perf_counter() - T))
import pytest; mark("import pytest")
import hypothesis; mark("import hypothesis")
import torch; mark("import torch")
import triton; mark("import triton")
ok = torch.cuda.is_available(); mark("torch.cuda.is_available")
n = torch.cuda.device_count(); mark("device_count")
p = torch.cuda.get_device_properties(0); mark("get_device_properties")
sys.path.insert(0, ".")
from kernels import registry; registry.load_builtin(); mark("kernels loaded")
import suite.plugin; mark("suite.plugin imported")
torch.empty(1, device="cuda"); mark("first CUDA tensor (context)")
prev = 0.0
for name, t in marks:
    print(f"{t:7.3f} s  (+{t - prev:6.3f})  {name}")
    prev = t
