"""Independent specs in worker processes: `envc check` analyses them, `envc compile`
lowers them, one spec per task, on forked workers.

Forked, so a worker starts with everything the parent has imported (pydantic building
the IR classes alone is about 0.3 s: paid once, not per worker) and needs nothing
pickled but the spec's path and its result. What a caller sees does not depend on the
workers: results come back in the order of the items, an exception a task raises is
raised again here, and when a worker dies (a crash, the OOM killer) every task not
back yet runs again in this process, so its outcome is what a run without workers
gives; `on_lost` is told first. A hang is not guarded against: a run without workers
would hang too.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

MIN_ITEMS = 4
"""Fewer specs than this are done in this process: starting workers would cost more
than it saves."""


def default_jobs() -> int:
    """Workers when the command line does not say: one per core this process may use.
    Not fewer on a busy machine: there the scheduler shares the cores among processes,
    so two workers still get more of them than one process."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def worth_it(jobs: int, items: int) -> bool:
    """Whether `map_in_workers` would start workers for this many items."""
    return jobs >= 2 and items >= MIN_ITEMS and "fork" in multiprocessing.get_all_start_methods()


def map_in_workers(
    task: Callable[[Item], Result],
    items: Sequence[Item],
    jobs: int,
    on_lost: Callable[[str], None] | None = None,
) -> list[Result]:
    """`[task(item) for item in items]`, on up to `jobs` forked workers when that pays.

    `task` must be a module-level function (it is pickled by name) whose result pickles.
    """
    if not worth_it(jobs, len(items)):
        return [task(item) for item in items]
    workers = min(jobs, len(items))
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    for stream in (sys.stdout, sys.stderr):  # a worker flushes its copy of them when it ends
        stream.flush()
    # The objects already made are shared with the workers until written to; a collection
    # in a worker would write to every one of them (copying the pages): freeze them first.
    gc.freeze()
    results: list[Result] = []
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
    try:
        futures = [pool.submit(task, item) for item in items]
        for future in futures:
            results.append(future.result())
    except BrokenProcessPool as lost:
        left = items[len(results) :]
        if on_lost is not None:
            why = str(lost) or "a worker process died"
            on_lost(f"{why}; the {len(left)} spec(s) left run in this process")
        results.extend(task(item) for item in left)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a task that raised leaves the rest unwanted
        gc.unfreeze()
    return results
