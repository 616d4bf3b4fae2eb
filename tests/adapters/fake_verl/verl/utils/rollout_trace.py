"""VERL's `rollout_trace_op` with tracing off (verl/utils/rollout_trace.py: the wrapper
awaits the method when no trace backend is configured)."""

import functools


def rollout_trace_op(func):
    @functools.wraps(func)
    async def async_wrapper(self, *args, **kwargs):
        return await func(self, *args, **kwargs)

    return async_wrapper
