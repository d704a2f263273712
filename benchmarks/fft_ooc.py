"""Out-of-core FFT against demand paging under a cgroup memory cap (issue 48): the seed's
experiment (FFTs on the Parallel Disk Model) at a size this disk holds.

Run through ``benchmarks/fft.py ooc`` (the methods and the report are in ``fft_ooc_run.py``;
this module holds the cgroups, the data files and the disk probe). Each capped method runs in
a child process placed in a fresh memory cgroup (v1 ``memory.limit_in_bytes`` or v2
``memory.max``), created under this
process' own cgroup and removed afterwards, also on errors and Ctrl-C. The cap is memory
*beyond the child's warmed-up baseline*: the child imports, compiles its kernels, then sets
its limit to its anonymous memory plus ``--cap`` (an interpreter with numpy, dask and numba
holds ~100+ MiB of anonymous pages that cannot be paged out without swap). Peak is the
cgroup's ``memory.max_usage_in_bytes`` (v1) or ``memory.peak`` (v2): anonymous memory plus
the page cache charged to it, never above the limit.

Methods
-------
``paging``       the in-core baseline: iterative in-place radix-2 complex64 FFT (bit
                 reversal, then log2 N butterfly sweeps) in Numba on an ``np.memmap`` of a
                 native copy of the data, under the cap: pages are evicted and faulted back.
                 Groups outer, butterflies inner, so every stage is one sequential sweep
                 (the kind order for paging). Twiddles from two sqrt(N) float64 tables.
``dfits``        ``dfits.fft.fft`` of the FITS file through the scratch store, written to a FITS
                 file (``(N, 2)`` float32, as the input) by ``dfits.to_fits``, under the cap,
                 block size from :func:`dfits.fft.plan.plan_disk`.
``floor``        sequential read + write of the data once per pass of the plan, each pass
                 reading the previous pass' file (fsync'd), under the cap.
``numpy``        ``numpy.fft.fft`` of the values in memory, no cap (reference).
``dfits-inmem``  ``dfits.fft.fft`` of the values in memory, no cap (reference).

Results are checked against ``numpy.fft.fft`` (relative RMS error) where numpy fits in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import time
from pathlib import Path

METHODS = ["paging", "dfits", "floor", "numpy", "dfits-inmem"]
CAPPED = {"paging", "dfits", "floor"}
SLAB = 1 << 22
_FILES = {
    "v1": ("memory.limit_in_bytes", "memory.max_usage_in_bytes", "total_rss"),
    "v2": ("memory.max", "memory.peak", "anon"),
}


def _memory_base() -> tuple[str, Path] | None:
    """(version, this process' memory cgroup directory), v1 first, or None."""
    mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    own = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
    for _, controllers, rel in own:
        if "memory" in controllers.split(","):
            for m in mounts:
                if m[2] == "cgroup" and "memory" in m[3].split(","):
                    return "v1", Path(m[1]) / rel.lstrip("/")
    for hid, _, rel in own:
        for m in mounts:
            if hid == "0" and m[2] == "cgroup2":
                path = Path(m[1]) / rel.lstrip("/")
                control = path / "cgroup.subtree_control"
                if control.exists() and "memory" in control.read_text().split():
                    return "v2", path
    return None


def cgroup_unavailable() -> str | None:
    """Why no memory cgroup can be made here, or None."""
    if not Path("/proc/self/cgroup").exists():
        return "no /proc/self/cgroup: cgroups need Linux"
    if os.geteuid() != 0:
        return f"creating a memory cgroup needs root (uid {os.geteuid()})"
    base = _memory_base()
    if base is None:
        return (
            "no cgroup memory controller: neither a v1 'memory' hierarchy nor a v2 one with "
            "'memory' in this cgroup's cgroup.subtree_control"
        )
    if not os.access(base[1], os.W_OK):
        return f"cannot create a cgroup in {base[1]} (not writable)"
    return None


class MemoryCap:
    """One memory cgroup: its limit, peak and anonymous memory (v1 or v2 file names)."""

    def __init__(self, version: str, path: Path) -> None:
        self.version, self.path = version, Path(path)
        self._limit, self._peak, self._anon = _FILES[version]

    @classmethod
    def from_env(cls) -> MemoryCap | None:
        spec = os.environ.get("DFITS_OOC_CGROUP")
        return cls(*spec.split(":", 1)) if spec else None

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def limit(self, nbytes: int) -> None:
        (self.path / self._limit).write_text(str(int(nbytes)))

    def reset_peak(self) -> None:
        with contextlib.suppress(OSError):  # v2 before Linux 6.12: peak since creation
            (self.path / self._peak).write_text("0")

    def peak(self) -> int:
        return int((self.path / self._peak).read_text())

    def anon(self) -> int:
        stat = self.stat()
        if self._anon not in stat:
            raise KeyError(f"{self._anon} not in {self.path}/memory.stat")
        return stat[self._anon]

    def stat(self) -> dict[str, int]:
        """``memory.stat`` as numbers."""
        return {
            line.split()[0]: int(line.split()[1])
            for line in (self.path / "memory.stat").read_text().splitlines()
        }

    def dirty(self) -> int:
        """Dirty and writeback page-cache bytes (v1 ``total_*``, v2 ``file_*``)."""
        stat = self.stat()
        return sum(
            next((stat[k] for k in (f"total_{key}", f"file_{key}", key) if k in stat), 0)
            for key in ("dirty", "writeback")
        )

    def limit_hits(self) -> int:
        """How often the cgroup's usage reached its limit (v1 ``memory.failcnt``; v2 the
        ``max`` count of ``memory.events``): each time, reclaim ran in the task that asked."""
        if self.version == "v1":
            return int((self.path / "memory.failcnt").read_text())
        events = dict(x.split() for x in (self.path / "memory.events").read_text().splitlines())
        return int(events.get("max", 0))


def io_counters() -> dict[str, int]:
    """This process' exact I/O and fault counters: ``/proc/self/io`` (``read_bytes`` and
    ``write_bytes`` are what reached the disk's queue, ``rchar``/``wchar`` what the system
    calls moved, ``cancelled_write_bytes`` dirty pages dropped unwritten by truncate or unlink)
    and ``getrusage``'s page faults (major: a page read back from disk)."""
    import resource

    out = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/io").read_text().splitlines():
            key, value = line.split(":")
            out[key] = int(value)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out |= {"majflt": usage.ru_majflt, "minflt": usage.ru_minflt}
    return out


def counters_text(io: dict, nbytes: int) -> str:
    """The exact counters of one run, in units of the data's size where they are bytes."""
    if not io:
        return ""

    def x(key: str) -> str:
        return f"{io.get(key, 0) / nbytes:.2f}"

    line = (
        f"\n{'':16s}disk read {x('read_bytes')}, written {x('write_bytes')} "
        f"(cancelled {x('cancelled_write_bytes')}); syscalls read {x('rchar')}, wrote "
        f"{x('wchar')} x 8N; major faults {io.get('majflt', 0)}"
    )
    if "limit_hits" in io:
        line += f"; limit hits {io['limit_hits']}, dirty+writeback <= "
        line += f"{io['dirty_most'] / 2**20:.0f} MiB"
    return line


class DirtyWatch:
    """The most dirty + writeback page-cache bytes a cgroup held, sampled every ``every`` s
    on a thread (a gauge: no counter of it exists)."""

    def __init__(self, group: MemoryCap, every: float = 0.02) -> None:
        import threading

        self.group, self.every, self.most = group, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.most = max(self.most, self.group.dirty())

    def __enter__(self) -> DirtyWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


@contextlib.contextmanager
def memory_cgroup():
    """A fresh child cgroup of this process' own, removed on exit whatever happens."""
    if why := cgroup_unavailable():
        raise RuntimeError(why)
    version, base = _memory_base()  # type: ignore[misc]
    path = base / f"dfits-fft-{os.getpid()}-{time.monotonic_ns()}"
    path.mkdir()
    try:
        yield MemoryCap(version, path)
    finally:
        for _ in range(50):  # our child has exited; wait for the kernel to notice, then rmdir
            with contextlib.suppress(OSError):
                path.rmdir()
                break
            time.sleep(0.1)


def run_child(cmd: list[str], cap: int | None, timeout: float | None) -> dict | None:
    """Run ``cmd`` (which prints one JSON line last), in a cgroup capped at ``cap`` bytes
    above its baseline when ``cap`` is given; None when it ran past ``timeout``."""
    with contextlib.ExitStack() as stack:
        # glibc's dynamic mmap threshold rises to the size of the first big block freed, so
        # later blocks come from its arenas and stay resident after free (12 MiB of blocks
        # then held ~24 MiB at 2**22); a fixed threshold hands every block back at free
        env = {"MALLOC_MMAP_THRESHOLD_": "65536", **os.environ}
        group = None
        if cap is not None:
            group = stack.enter_context(memory_cgroup())
            env["DFITS_OOC_CGROUP"] = f"{group.version}:{group.path}"
            env["DFITS_OOC_CAP"] = str(cap)
        # the child joins the cgroup before exec: every page it ever touches is charged there
        join = (lambda: group.add(os.getpid())) if group else None
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, preexec_fn=join)  # fmt: skip
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return None
        except BaseException:  # Ctrl-C: end the child before the cgroup is removed
            proc.kill()
            proc.wait()
            raise
        if proc.returncode:
            killed = " (killed: the cap's OOM killer?)" if proc.returncode == -9 else ""
            what = " ".join(cmd[1:4])
            raise RuntimeError(f"{what} exited {proc.returncode}{killed}: {err[-3000:]}")
        return json.loads(out.strip().splitlines()[-1])


def _slabs(n: int):
    """The data, deterministic, as (m, 2) float32 slabs (real, imaginary)."""
    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(max(1, n // SLAB)):
        yield rng.standard_normal((min(n, SLAB), 2), dtype=np.float32)


def input_file(directory: Path, log2n: int) -> Path:
    """An ``(N, 2)`` float32 FITS image (real, imaginary parts), written once and reused."""
    from dfits.io.writer import ImageWriter

    path = directory / f"fft-ooc-{log2n}.fits"
    if not path.exists():
        with ImageWriter(path, (1 << log2n, 2), ">f4") as out:
            for slab in _slabs(1 << log2n):
                out.write(slab)
    return path


def native_copy(path: Path, log2n: int) -> None:
    """The values as native complex64, the file demand paging transforms in place."""
    with open(path, "wb") as fh:
        for slab in _slabs(1 << log2n):
            fh.write(slab.tobytes())
        os.fsync(fh.fileno())


def reference(log2n: int):
    import numpy as np

    values = np.concatenate([s.view(np.complex64).ravel() for s in _slabs(1 << log2n)])
    return np.fft.fft(values)


def drop_cache(path: Path) -> None:
    """Evict one file's pages (not the machine's): each run starts from the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def probe_disk(directory: Path, nbytes: int) -> tuple[float, float]:
    """(bytes/s of a sequential write + read, seconds of one random 4 KiB read), measured on a
    probe file written and dropped from the page cache."""
    probe = directory / "fft-disk-probe.bin"
    chunk = os.urandom(1 << 20)
    start = time.perf_counter()
    with open(probe, "wb") as fh:
        for _ in range(max(1, nbytes >> 20)):
            fh.write(chunk)
        os.fsync(fh.fileno())
    drop_cache(probe)
    with open(probe, "rb", buffering=0) as fh:
        while fh.read(8 << 20):
            pass
    bandwidth = 2 * max(1, nbytes >> 20) * (1 << 20) / (time.perf_counter() - start)
    drop_cache(probe)
    fd = os.open(probe, os.O_RDONLY)
    rng = random.Random(0)
    start = time.perf_counter()
    for _ in range(64):
        os.pread(fd, 4096, rng.randrange(max(1, nbytes >> 12)) << 12)
    latency = (time.perf_counter() - start) / 64
    os.close(fd)
    probe.unlink()
    return bandwidth, latency
