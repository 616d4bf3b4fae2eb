"""`envc serve`: compiled environments and task sets behind an OpenEnv-compatible HTTP +
WebSocket server (docs/serving.md#envc-serve-an-openenv-compatible-server).

- catalog.py: the served packages and tasks, loaded once at start;
- sessions.py: episodes keyed by id (create, call, fork, reset, score, close), reached
  by the agent's channel through handles, with capacity pools for the trainer and the
  agent's channel, idle expiry and per-call time limits;
- journal.py: an append-only, fsynced journal per session so a killed server loses no
  acknowledged call;
- http.py: the Starlette app (OpenEnv's /reset, /step, /state, /health, /schema,
  /metadata, /ws, and the trainer's /sessions routes);
- deadlines.py: read deadlines for request headers and bodies (slow clients are cut off);
- compiler/cli/serve.py: the `envc serve` click command.
"""
