"""The probe of what the installed CPU interpreter makes of Python's ``and``, ``or``, ``not`` and a chained comparison
on block tensors (suite/checks/interpreter.py: ``misevaluated``). Imported only once ``TRITON_INTERPRET=1`` is set,
so that ``@triton.jit`` gives the interpreter's function; never compiled (Triton 3.6's compiler refuses the chain).
"""

from __future__ import annotations

import triton
import triton.language as tl

LANES = 8
# Row by row: what compiled Triton computes elementwise for x = 0..7.
EXPECTED = {"and": [0, 0, 1, 1, 1, 1, 0, 0], "or": [1, 1, 0, 0, 0, 0, 1, 1], "not": [1, 1, 0, 0, 0, 0, 0, 0],
            "chained comparison": [0, 0, 1, 1, 1, 1, 0, 0]}
SOURCE = {"and": "(x >= 2) and (x < 6)", "or": "(x < 2) or (x >= 6)", "not": "not (x >= 2)",
          "chained comparison": "2 <= x < 6"}


@triton.jit
def semantic_probe(out_ptr):
    x = tl.arange(0, 8)
    zero = tl.zeros([8], dtype=tl.int32)
    tl.store(out_ptr + x, zero + ((x >= 2) and (x < 6)))
    tl.store(out_ptr + 8 + x, zero + ((x < 2) or (x >= 6)))
    tl.store(out_ptr + 16 + x, zero + (not (x >= 2)))
    tl.store(out_ptr + 24 + x, zero + (2 <= x < 6))
