"""Running many rollouts or calibration runs: on threads here, or on a Ray cluster.

Both executors take the same jobs and a module-level job function `fn(envs, job)`, and
return the results in the jobs' order, whatever order they finished in: a job's result
depends only on the job (its task, sample index and seed), so the local run and the Ray
run give the same results. Threads suit the work, which mostly waits on a model
endpoint; `concurrency` bounds the jobs in flight (per Ray task, on Ray).

Ray workers cannot be handed the driver's imported packages, so each environment travels
as an `EnvBundle`: the spec's IR as JSON and the generated package's files. A worker
writes the files once under its temp folder (keyed by their digest) and imports them
from there, so a cluster needs envc installed on every node but no shared filesystem.
`ray` is imported only here, and only when a Ray executor is made (`--ray`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from compiler import ir
from compiler.build import packages
from compiler.synth import graph as tool_graphs
from compiler.synth import sample

J = TypeVar("J")
R = TypeVar("R")
Progress = Callable[[int], None]
"""Called with the number of jobs finished so far."""
JobFunction = Callable[[Mapping[str, sample.SampleEnv], J], R]
PACKAGE_SKIP = frozenset({"tests", "__pycache__"})
"""Folders of a generated package a worker does not need."""


class ScaleError(RuntimeError):
    """Ray is missing or unreachable (the message says which and what to do)."""


class Executor(Protocol):
    def map(self, fn: JobFunction[J, R], jobs: Sequence[J], progress: Progress | None = None) -> list[R]: ...


def run_threads(
    envs: Mapping[str, sample.SampleEnv],
    fn: JobFunction[J, R],
    jobs: Sequence[J],
    concurrency: int,
    progress: Progress | None = None,
) -> list[R]:
    """`fn(envs, job)` for every job on at most `concurrency` threads, in the jobs' order."""
    if concurrency <= 1 or len(jobs) <= 1:
        results = []
        for job in jobs:
            results.append(fn(envs, job))
            if progress is not None:
                progress(len(results))
        return results
    done = 0
    lock = threading.Lock()

    def one(job: J) -> R:
        nonlocal done
        result = fn(envs, job)
        with lock:
            done += 1
            if progress is not None:
                progress(done)
        return result

    with ThreadPoolExecutor(max_workers=min(concurrency, len(jobs)), thread_name_prefix="envc-job") as pool:
        return list(pool.map(one, jobs))


@dataclass(frozen=True)
class LocalExecutor:
    """Jobs on threads of this process."""

    envs: Mapping[str, sample.SampleEnv]
    concurrency: int = 1

    def map(self, fn: JobFunction[J, R], jobs: Sequence[J], progress: Progress | None = None) -> list[R]:
        return run_threads(self.envs, fn, jobs, self.concurrency, progress)


# =========================================================================== bundles


@dataclass(frozen=True)
class EnvBundle:
    """One environment as a Ray worker receives it."""

    name: str
    env_json: str
    files: tuple[tuple[str, bytes], ...]
    """(path inside the package, content), sorted."""

    @property
    def digest(self) -> str:
        sha = hashlib.sha256(self.env_json.encode("utf-8"))
        for path, content in self.files:
            sha.update(path.encode("utf-8") + b"\0" + hashlib.sha256(content).digest())
        return sha.hexdigest()[:16]


def bundle(env: sample.SampleEnv) -> EnvBundle:
    folder = packages.package_folder(env.package)
    files = sorted(
        (path.relative_to(folder).as_posix(), path.read_bytes())
        for path in folder.rglob("*")
        if path.is_file() and not PACKAGE_SKIP.intersection(path.relative_to(folder).parts)
    )
    return EnvBundle(env.name, env.model.model_dump_json(), tuple(files))


_OPENED: dict[tuple[str, ...], dict[str, sample.SampleEnv]] = {}
_OPEN_LOCK = threading.Lock()


def open_bundles(bundles: Sequence[EnvBundle], weights: tool_graphs.GraphWeights) -> dict[str, sample.SampleEnv]:
    """The environments of `bundles`, written out and imported once per process."""
    key = tuple(b.digest for b in bundles)
    with _OPEN_LOCK:
        if key not in _OPENED:
            _OPENED[key] = {b.name: _open(b, weights) for b in bundles}
        return _OPENED[key]


def _open(bundle: EnvBundle, weights: tool_graphs.GraphWeights) -> sample.SampleEnv:
    folder = Path(tempfile.gettempdir()) / "envc-packages" / bundle.digest / bundle.name
    if not folder.is_dir():
        scratch = Path(tempfile.mkdtemp(prefix=f".{bundle.name}.", dir=_made(folder.parent)))
        for path, content in bundle.files:
            target = scratch / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        try:
            os.replace(scratch, folder)
        except OSError:
            shutil.rmtree(scratch, ignore_errors=True)
            if not folder.is_dir():
                raise  # not another worker that got there first (its copy is the same)
    return sample.load_env(ir.Environment.model_validate_json(bundle.env_json), folder, weights)


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# =========================================================================== Ray


def _run_chunk(
    bundles: Sequence[EnvBundle],
    weights: tool_graphs.GraphWeights,
    fn: JobFunction[J, R],
    jobs: Sequence[J],
    concurrency: int,
) -> list[R]:
    """What one Ray task does: open the environments, run its jobs on threads."""
    return run_threads(open_bundles(bundles, weights), fn, jobs, concurrency)


class RayExecutor:
    """Jobs as Ray tasks, `concurrency` jobs to a task (each running them on as many
    threads). Connects to `address` (`auto`: the cluster this machine belongs to) unless
    this process is already connected; disconnects only from what it connected to."""

    def __init__(
        self,
        envs: Mapping[str, sample.SampleEnv],
        address: str,
        concurrency: int = 1,
        weights: tool_graphs.GraphWeights | None = None,
    ) -> None:
        self.bundles = [bundle(env) for _, env in sorted(envs.items())]
        self.address = address
        self.concurrency = max(1, concurrency)
        self.weights = weights or tool_graphs.GraphWeights()

    def map(self, fn: JobFunction[J, R], jobs: Sequence[J], progress: Progress | None = None) -> list[R]:
        ray = _import_ray()
        connected_here = not ray.is_initialized()
        if connected_here:
            check_reachable(self.address)
            try:
                ray.init(address=self.address, log_to_driver=False)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise ScaleError(f"cannot connect to Ray at {self.address!r}: {exc}") from exc
        try:
            return self._map(ray, fn, jobs, progress)
        finally:
            if connected_here:
                ray.shutdown()

    def _map(self, ray: Any, fn: JobFunction[J, R], jobs: Sequence[J], progress: Progress | None) -> list[R]:
        remote = ray.remote(num_cpus=1, max_retries=0)(_run_chunk)
        bundles, weights = ray.put(self.bundles), ray.put(self.weights)
        size = self.concurrency
        chunks = [list(jobs[start : start + size]) for start in range(0, len(jobs), size)]
        refs = [remote.remote(bundles, weights, fn, chunk, self.concurrency) for chunk in chunks]
        sizes = {ref: len(chunk) for ref, chunk in zip(refs, chunks)}
        pending, done = list(refs), 0
        while pending:
            finished, pending = ray.wait(pending, num_returns=1)
            done += sum(sizes[ref] for ref in finished)
            if progress is not None:
                progress(done)
        results: list[R] = []
        for part in ray.get(refs):
            results.extend(part)
        return results


CONNECT_TIMEOUT = 5.0
"""Seconds to reach a cluster's address before giving up (Ray itself retries for minutes)."""


def check_reachable(address: str) -> None:
    """A `host:port` or `ray://host:port` address accepts connections, else ScaleError at
    once (`auto` is Ray's to find: it fails fast when there is no cluster)."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ScaleError(f"a Ray address is `auto`, HOST:PORT or ray://HOST:PORT, not {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise ScaleError(f"cannot connect to Ray at {address!r}: {exc.strerror or exc}") from exc


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ScaleError("--ray needs Ray: pip install 'envc[ray]' (or pip install ray)") from exc
    return ray
