"""The child side of envc's compile-time QC run: pytest behind an audit hook.

Not imported by envc: `compiler/check/dynamic.py` runs this file as a script,
`python -I -B sandboxed_pytest.py SANDBOX INVOCATION_DIR WRITABLE -- PYTEST_ARGS`, with
`HOME`, `TMPDIR` and (once pytest is configured) the working folder set to SANDBOX, a fresh
temporary folder. Generated tests run code a
spec's `python` bodies wrote; the hook installed here before pytest starts refuses what QC
never needs: any socket connection, bind or name lookup, starting a process, and writing,
removing or renaming files outside SANDBOX, the one file WRITABLE (pytest's report) and
`/dev/null`.
An audit hook is no sandbox against code that sets out to escape it (ctypes, for one); it
backs up envc's AST rules, which keep such code out of a package in the first place.
"""

from __future__ import annotations

import os
import sys

REFUSED_EVENTS = frozenset(
    {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo"}
    | {"socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo"}
    | {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty"}
    | {"pty.spawn", "os.startfile", "webbrowser.open"}
)
"""Network and processes: a test has no business with either (a process would escape the hook)."""
PATH_EVENTS = frozenset(
    {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.truncate"}
    | {"os.chmod", "os.chown", "os.utime", "shutil.rmtree"}
)
"""Events whose path arguments must lie in the sandbox."""
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class QCRefused(PermissionError):
    """What the hook raises: the message says what envc's QC refused and why."""


def install(sandbox: str, writable: str) -> None:
    """Refuse, from now on in this process, what `REFUSED_EVENTS` and `PATH_EVENTS` name and
    any file opened for writing outside `sandbox` (and the file `writable`)."""
    root = os.path.realpath(sandbox)
    allowed_file = os.path.realpath(writable) if writable else ""

    def inside(path: object) -> bool:
        if isinstance(path, int):
            return True  # an open descriptor: its path was checked when it was opened
        if not isinstance(path, (str, bytes, os.PathLike)):
            return True
        full = os.path.realpath(os.fsdecode(path))
        return full in (allowed_file, root, os.devnull) or full.startswith(root + os.sep)

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event in REFUSED_EVENTS:
            what = "network access" if event.startswith("socket.") else "starting a process"
            raise QCRefused(f"envc QC: {what} is refused while the generated tests run ({event})")
        if event == "open" and len(args) >= 3 and _writes(args[1], args[2]) and not inside(args[0]):
            raise QCRefused(f"envc QC: writing outside the test's temporary folder is refused ({args[0]!r})")
        if event in PATH_EVENTS and not all(inside(a) for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))):
            raise QCRefused(f"envc QC: changing files outside the test's temporary folder is refused ({event})")

    sys.addaudithook(hook)


def _writes(mode: object, flags: object) -> bool:
    """Whether an `open` event opens for writing (`open()` gives a mode, `os.open` flags)."""
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & WRITE_FLAGS)


class _IntoSandbox:
    """A pytest plugin: once pytest is configured (its paths, and the test ids it prints,
    taken relative to the check tree), the tests run with the sandbox as working folder."""

    def __init__(self, sandbox: str) -> None:
        self.sandbox = sandbox

    def pytest_configure(self) -> None:
        os.chdir(self.sandbox)


def main(argv: list[str]) -> int:
    sandbox, invocation, writable, separator, *pytest_args = argv
    if separator != "--":
        raise SystemExit("usage: sandboxed_pytest.py SANDBOX INVOCATION_DIR WRITABLE -- PYTEST_ARGS")
    sys.dont_write_bytecode = True
    os.chdir(invocation)
    import pytest

    install(sandbox, writable)
    return int(pytest.main(pytest_args, plugins=[_IntoSandbox(sandbox)]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
