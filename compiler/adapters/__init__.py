"""Adapters from compiled environments to trainers' own interfaces (docs/serving.md).

- `trl`: what `templates/trl_env.py.jinja` renders into every package as `trl_env.py`, a
  class for TRL's `GRPOTrainer(environment_factory=...)` (standard library only).
- `verl_config`: VERL's multi-turn tool config YAML for a package or a task set.
- `verl`: `EnvcTool`, a VERL `BaseTool` (needs VERL itself, imported only there).
- `command`: `envc adapters`.
"""
