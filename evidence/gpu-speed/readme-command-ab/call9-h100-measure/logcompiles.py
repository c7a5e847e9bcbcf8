"""Experiment only: every JIT compile request of this process, with its time, to $LOGCOMPILES/compiles-<pid>.jsonl."""
import json, os, time
from triton import knobs

_dir = os.environ.get("LOGCOMPILES")
_stack = []
_listen_prev = knobs.compilation.listener
_hits = []


def _cache_hook(**kw):
    _stack.append((time.perf_counter(), kw))
    return False


def _post_hook(**kw):
    if not _stack or _dir is None:
        return
    t0, k = _stack.pop()
    c = k["compile"]
    rec = {"fn": k["fn"].name, "repr": k["repr"], "constants": {str(a): str(b) for a, b in c["constants"].items()},
           "attrs": str(c["configs"]), "s": round(time.perf_counter() - t0, 4), "t": round(time.time(), 3),
           "hit": _hits.pop() if _hits else None}
    with open(os.path.join(_dir, f"compiles-{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")


def _listener(*, cache_hit, **kw):
    _hits.append(bool(cache_hit))
    if _listen_prev is not None:
        _listen_prev(cache_hit=cache_hit, **kw)


if _dir:
    os.makedirs(_dir, exist_ok=True)
    knobs.runtime.jit_cache_hook = _cache_hook
    knobs.runtime.jit_post_compile_hook = _post_hook
    knobs.compilation.listener = _listener
