"""ruff, as the lowering formats generated files and as the checks lint them: where its
binary is and the line length both use."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from compiler.lower.errors import LoweringError

LINE_LENGTH = 100


def ruff_binary() -> str:
    from ruff.__main__ import find_ruff_bin  # type: ignore[import-untyped]

    return str(find_ruff_bin())


def format_python_files(files: dict[str, str]) -> dict[str, str]:
    """Format with ruff, configured here rather than by whatever config is around: every
    file in one run (one start of ruff per package, not one per file), in a temporary
    folder. ruff formats each file by itself, so this gives what formatting each alone
    gives."""
    with tempfile.TemporaryDirectory(prefix="envc-format-") as folder:
        root = Path(folder)
        for path, text in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(text.encode("utf-8"))
        result = subprocess.run(
            [
                ruff_binary(),
                "format",
                "--isolated",
                "--no-cache",
                "--quiet",
                "--line-length",
                str(LINE_LENGTH),
                "--target-version",
                "py311",
                *(str(root / path) for path in files),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            problem = result.stderr.strip().replace(f"{root}/", "")
            raise LoweringError(f"ruff could not format the generated files: {problem}")
        return {path: (root / path).read_bytes().decode("utf-8") for path in files}
