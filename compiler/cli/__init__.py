"""The `envc` command line, one module per command or group of commands:

- `app`: the click group, `--version`, `main` (the console script; exit 3 on a bug);
- `spec`: check, fmt, compile, new; `llm`: lock, draft; `graph`: graph;
- `tasks`: sample, tasks, export, calibrate;
- `serve`, `mcp`, `rollout`, `adapters`: imported only when they run (`app.LAZY_COMMANDS`);
- `common`: what they share (exit codes, reading spec and task files, printing, writing).
"""

from compiler.cli.app import main

__all__ = ["main"]
