"""suite/compile_share.py: workers needing the same kernel variant at once compile it once."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from suite import compile_share

ROOT = Path(__file__).resolve().parent.parent

# A process looking up one cache entry through the shared manager: prints whether it found it and how long it took.
LOOKUP = textwrap.dedent("""
    import json, sys, time
    from suite.compile_share import _held, _manager_class
    print("looking", flush=True)
    start = time.monotonic()
    group = _manager_class()("entry").get_group("kernel.json")
    print(json.dumps({"group": group, "seconds": time.monotonic() - start, "holds_lock": "entry" in next(iter(_held), "")}))
""")

# Two processes compiling the same kernel variant for sm_90 (no GPU needed): how many compiled it from source.
COMPILE = textwrap.dedent("""
    import json, sys, time
    from triton import knobs
    from kernels import registry
    from suite import compile_matrix, compile_share
    compile_share.install()
    counts = {"compiled": 0, "cached": 0}
    knobs.compilation.listener = lambda *, cache_hit, **_: counts.__setitem__("cached" if cache_hit else "compiled",
                                                                              counts["cached" if cache_hit else "compiled"] + 1)
    from triton.compiler import compiler
    make_ir = compiler.ASTSource.make_ir

    def slow_make_ir(self, *args, **kwargs):  # after the cache lookup: the two compiles surely overlap
        time.sleep(1.5)
        return make_ir(self, *args, **kwargs)

    compiler.ASTSource.make_ir = slow_make_ir
    registry.load_builtin()
    spec = registry.get("vector_add")
    print("ready", flush=True)
    sys.stdin.readline()  # both processes start compiling at the same moment
    record = compile_matrix._compile(spec, "fp16", {"BLOCK_SIZE": 512, "num_warps": 4}, ("cuda", "sm_90", 32))
    print(json.dumps({**counts, "status": record["status"]}))
""")


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITON_CACHE_MANAGER")}
    return {**env, "TRITON_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT), **extra}


def _hold(cache: Path) -> int:
    """Take the entry's lock as a worker compiling it would."""
    (cache / "entry").mkdir(parents=True, exist_ok=True)
    fd = os.open(cache / "entry" / compile_share.LOCK_NAME, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _write_entry(cache: Path) -> None:
    from triton.runtime.cache import FileCacheManager

    os.environ["TRITON_CACHE_DIR"] = str(cache)  # knobs read it when a manager is made
    try:
        manager = FileCacheManager("entry")
        group = {"kernel.cubin": manager.put(b"binary", "kernel.cubin"), "kernel.json": manager.put("{}", "kernel.json")}
        manager.put_group("kernel.json", group)
    finally:
        del os.environ["TRITON_CACHE_DIR"]


def _lookup_while_held(cache: Path, held_s: float, write: bool) -> dict:
    """Another process looks the entry up while this one holds its lock for ``held_s``, then writes the entry (or,
    like a compile that raised, does not) and lets go: what the lookup returned."""
    fd = _hold(cache)
    child = subprocess.Popen([sys.executable, "-c", LOOKUP], stdout=subprocess.PIPE, text=True, env=_env(cache),
                             cwd=ROOT)
    assert child.stdout.readline().strip() == "looking"
    time.sleep(held_s)
    assert child.poll() is None, "the lookup did not wait for the entry being compiled"
    if write:
        _write_entry(cache)
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    return json.loads(child.communicate(timeout=60)[0])


def test_a_lookup_waits_for_the_worker_compiling_the_entry_and_reads_what_it_wrote(tmp_path: Path) -> None:
    result = _lookup_while_held(tmp_path, 1.0, write=True)
    assert result["group"] and "kernel.cubin" in result["group"], result  # a hit: nothing to compile
    assert result["seconds"] >= 0.9
    assert not result["holds_lock"]


def test_a_lookup_compiles_itself_when_the_other_worker_wrote_nothing(tmp_path: Path) -> None:
    """The holder's compile raised (or it died): the waiter gets a miss and the lock, and compiles."""
    result = _lookup_while_held(tmp_path, 0.5, write=False)
    assert result["group"] is None and result["holds_lock"], result


def test_a_miss_with_no_one_compiling_does_not_wait(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", LOOKUP], capture_output=True, text=True, env=_env(tmp_path),
                         cwd=ROOT, timeout=60, check=True).stdout
    result = json.loads(out.splitlines()[-1])
    assert result["group"] is None and result["holds_lock"] and result["seconds"] < 0.5, result


def _compile_at_once(cache: Path, share: str) -> list[dict]:
    procs = [subprocess.Popen([sys.executable, "-c", COMPILE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, env=_env(cache, SUITE_COMPILE_SHARE=share)) for _ in range(2)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1]) for p in procs]
    assert all(r["status"] == "ok" for r in results), results
    return results


def test_two_workers_compiling_the_same_kernel_at_once_compile_it_once(tmp_path: Path) -> None:
    results = _compile_at_once(tmp_path, "1")
    assert sum(r["compiled"] for r in results) == 1, results
    assert sum(r["cached"] for r in results) == 1, results


def test_without_the_lock_both_compile(tmp_path: Path) -> None:
    """What the lock prevents (SUITE_COMPILE_SHARE=0): two processes missing the cache at once both compile."""
    results = _compile_at_once(tmp_path, "0")
    assert sum(r["compiled"] for r in results) == 2, results


def test_loading_the_plugin_imports_no_triton() -> None:
    """Triton must be imported after the backend sets TRITON_INTERPRET: triton.language's own functions are made
    interpreted or compiled at import, and an interpreted kernel cannot call compiled ones."""
    code = "import sys, suite.plugin; print(sorted(m for m in sys.modules if m.split('.')[0] == 'triton'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env=_env(Path("/nonexistent")), check=True).stdout
    assert out.strip() == "[]", out


# A compile that raises, through the compile matrix (which records the failure and goes on); then the process idles.
FAILING = textwrap.dedent("""
    import sys, time
    import triton, triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from kernels import registry
    from suite import compile_matrix, compile_share
    compile_share.install()

    @triton.jit
    def broken(x):
        tl.static_assert(False, "planted")

    def compile_broken(*_, **__):
        try:
            triton.compile(ASTSource(broken, signature={"x": "i32"}, constexprs={}), target=GPUTarget("cuda", 90, 32))
        except Exception as exc:
            return {"status": "failed", "error": str(exc)[:80]}
        return {"status": "ok"}

    if sys.argv[1] == "matrix":  # the compile matrix's record of a failed compile, then idle
        registry.load_builtin()
        compile_matrix._compile = compile_broken
        print(compile_matrix.compile_one(registry.get("vector_add"), "fp16", {}, ("cuda", "sm_90", 32))["status"],
              flush=True)
        time.sleep(20)
    else:  # the same compile in another process: how long it took
        start = time.monotonic()
        compile_broken()
        print(time.monotonic() - start, flush=True)
""")


def test_a_failed_compile_keeps_no_one_waiting(tmp_path: Path) -> None:
    """The process whose compile raised goes on (the compile matrix records the failure) and then idles: it must
    not keep holding the entry's lock, or every other worker needing that variant waits the full bound."""
    script = tmp_path / "failing.py"  # @triton.jit needs its source in a file
    script.write_text(FAILING)
    cache = tmp_path / "cache"
    idle = subprocess.Popen([sys.executable, str(script), "matrix"], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=_env(cache))
    try:
        assert idle.stdout.readline().strip() == "failed"
        out = subprocess.run([sys.executable, str(script), "again"], capture_output=True, text=True, cwd=ROOT,
                             env=_env(cache), timeout=120).stdout
        assert float(out.strip().splitlines()[-1]) < 5.0, out  # it did not wait for the idle process
    finally:
        idle.kill()


def test_a_filesystem_without_locks_compiles_without_waiting(tmp_path: Path, monkeypatch) -> None:
    """flock failing for any reason but another holder (ENOLCK on some NFS, ENOSYS): Triton's behaviour, no wait."""
    import errno

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compile_share.fcntl, "flock", no_locks)
    start = time.monotonic()
    assert compile_share._manager_class()("entry").get_group("kernel.json") is None
    assert time.monotonic() - start < 1.0 and not compile_share._held
