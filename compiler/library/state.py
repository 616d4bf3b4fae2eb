"""The built-in state fields: the append-only audit log and the virtual clock exist in
every environment; id counters and the random state only where `next_id` / `random_*`
are used. Built-ins with effects (`compiler/library/functions.py`) change these."""

from __future__ import annotations

AUDIT_LOG = "audit_log"
CLOCK = "clock"
ID_COUNTERS = "id_counters"
RNG_STATE = "rng_state"
RANDOM_SEED = "random_seed"
BUILTIN_STATE = (AUDIT_LOG, CLOCK, ID_COUNTERS, RNG_STATE, RANDOM_SEED)
RUNTIME_KEPT = (ID_COUNTERS, RNG_STATE, RANDOM_SEED)
"""Built-in fields only the runtime changes (scenarios may set them)."""
