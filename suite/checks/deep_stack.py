"""Kernel launches called from a frame that starts a large chunk of CPython's frame stack (a CPU-time fix for the
interpreter backend; no check changes).

CPython 3.11 and later keep Python frames on a per-thread stack made of chunks (16 KiB each unless a frame needs
more) and give a chunk back to the OS (munmap) as soon as the frame at its base returns. Triton's CPU interpreter
calls a few Python functions per operation of every program; where that call depth crosses a chunk boundary, every
such call maps a fresh chunk and unmaps it again: 257,000 mmap/munmap pairs (and the page faults of every fresh
chunk) in one layernorm bf16 reference test, a third of its time. :func:`call` runs the launch from a frame too large
for a 16 KiB chunk, so CPython starts a 64 KiB chunk with it and the launch's own frames (about 5,000 slots of
room) stay in that chunk: the boundary is crossed once per launch, not once per operation. On CPython 3.10 (frames
on the heap) it is one more call.
"""

from __future__ import annotations

import os
from typing import Any

# Local variable slots of the calling frame: with CPython's 1000-slot margin, more than a 32 KiB chunk holds, so
# the chunk it starts is 64 KiB (8192 slots), about 4,990 of them left to the frames the launch calls.
SLOTS = 3200


def _make_call() -> Any:
    names = ", ".join(f"_{i}" for i in range(SLOTS))  # `del` makes each a local: a slot of the frame, never set
    namespace: dict[str, Any] = {}
    exec("def deep_call(fn, *args, **kwargs):\n"  # generated: a signature with SLOTS locals
         "    if False:\n"
         f"        del {names}\n"
         "    return fn(*args, **kwargs)\n", namespace)
    return namespace["deep_call"]


_DEEP_CALL = _make_call()  # a function, made once: the frame stack is per thread, nothing here is state


def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, from a frame that starts its own 64 KiB chunk of the frame stack on the interpreter
    (``TRITON_INTERPRET=1``), where the thrashing is. A GPU launch is called as it is: a fresh chunk per call would add
    a map and an unmap to every launch a benchmark times, and that path has not been measured on a GPU."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return _DEEP_CALL(fn, *args, **kwargs)
    return fn(*args, **kwargs)
