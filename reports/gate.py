"""The toolchain gate's rule and wording (standard library only: the suite's --retune-check and `reports compare`).

With ``--retune-check`` the suite times every valid config of a kernel on its benchmark shapes, on the toolchain at
hand, writes nothing into the shipped caches, and records for each cached winner its time and the fastest config's
(suite/checks/autotune.py, gate_records). A cached winner **loses** when its median is more than MARGIN slower than the
fastest config's and the gap is wider than the two timings' interquartile ranges together: a winner within the
timings' own spread is never flagged. ``compare`` calls every losing winner of the candidate a regression.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

MARGIN = 0.05


def valid_ms(value: Any) -> bool:
    """A time the gate can judge: a positive, finite number of milliseconds (a timer that returns 0 or NaN measured
    nothing). Run files write NaN and inf as strings."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def loses(cached: Mapping[str, Any], best: Mapping[str, Any]) -> bool:
    """``cached`` and ``best``: timings with ``median_ms`` and ``iqr_ms``. A cached winner timed as zero, negative,
    NaN or inf loses (nothing says it is fast)."""
    if not valid_ms(cached["median_ms"]):
        return True
    gap = cached["median_ms"] - best["median_ms"]
    return gap > max(MARGIN * best["median_ms"], cached["iqr_ms"] + best["iqr_ms"])


def where(g: Mapping[str, Any]) -> str:
    return f"{g['kernel']} {g['dtype']} " + ",".join(f"{k}={v}" for k, v in g["shape"].items())


def text(g: Mapping[str, Any]) -> str:
    """One losing cached winner, as the summary and compare say it."""
    head = f"{where(g)}: cached {json.dumps(g['cached_config'], sort_keys=True)}"
    if g.get("best_config") is None or not valid_ms(g.get("best_ms")):
        return f"{head}: {g.get('why')}"
    best = f"{json.dumps(g['best_config'], sort_keys=True)} {g['best_ms']:.4f} ms"
    if not valid_ms(g.get("cached_ms")):
        return f"{head}: {g.get('why')}; fastest now {best}"
    return (f"{head} {g['cached_ms']:.4f} ms, {g['loss']:.2f}x the fastest now {best} (loses "
            f"{g['cached_ms'] - g['best_ms']:.4f} ms)")
