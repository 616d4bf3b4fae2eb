"""`envc compile` and `envc lock` with `llm` bodies, against a loopback model (docs/llm.md).

Every scenario ends in a documented state: the package and envc.lock written, or
neither (nothing half-written: no output folder, no lock, no temporary files), with the
diagnostic the docs name. Most runs skip QC (`--no-qc`); the healing runs check fully,
since failing generated tests is one of the stages a fill is healed through.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from .chat_server import ChatServer, Reply, fenced
from .conftest import GOOD, SPEC, envc, pyproject, snapshot

LOCK = Path("specs") / "envc.lock"
SPEC_FILE = Path("specs") / "shelf.envspec"


def lock_entry(project: Path) -> dict[str, Any]:
    data = json.loads((project / LOCK).read_text(encoding="utf-8"))
    entry: dict[str, Any] = data["fills"]["shelf.envspec"]["tool count_books"]
    return entry


def nothing_written(project: Path) -> None:
    assert not (project / "out").exists(), "no package"
    assert not (project / LOCK).exists(), "no lock"
    assert not [p.name for p in (project / "specs").iterdir() if p.name.startswith(".")], "no temporary files"


def codes(output: str) -> list[str]:
    return [line.split(" - error ")[1].split(":")[0] for line in output.splitlines() if " - error " in line]


# --------------------------------------------------------------------------- filling and the lock


def test_a_correct_fill_is_compiled_and_locked(project: Path, server: ChatServer) -> None:
    server.replies.append(Reply(fenced(GOOD)))
    result = envc("compile", "--no-qc")
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 1
    entry = lock_entry(project)
    assert entry["body"] == GOOD and entry["model"] == "scripted-model" and entry["attempt"] == 1
    assert entry["request_sha"] == entry["accepted_request_sha"] and len(entry["request_sha"]) == 64
    provenance = entry["provenance"]
    assert provenance["response_model"] == "scripted-model" and provenance["system_fingerprint"] == "fp_scripted"
    assert [a["failure"] for a in provenance["attempts"]] == [""]
    environment = (project / "out" / "shelf" / "environment.py").read_text(encoding="utf-8")
    assert 'return len(state["books"])' in environment
    assert "healing: 1 of 1 fills accepted (1 at attempt 1)" in result.stderr


def test_a_current_lock_makes_no_request(project: Path, server: ChatServer) -> None:
    server.replies.append(Reply(fenced(GOOD)))
    assert envc("compile", "--no-qc").exit_code == 0
    lock_text = (project / LOCK).read_text(encoding="utf-8")
    shutil.rmtree(project / "out")
    again = envc("compile", "--no-qc")
    assert again.exit_code == 0, again.output
    assert len(server.requests) == 1, "the second build used the lock"
    assert (project / LOCK).read_text(encoding="utf-8") == lock_text
    assert "healing" not in again.stderr


def test_the_lock_is_an_input_of_the_manifest(project: Path, server: ChatServer) -> None:
    server.replies.append(Reply(fenced(GOOD)))
    assert envc("compile", "--no-qc").exit_code == 0
    manifest = json.loads((project / "out" / "shelf" / ".envc-manifest.json").read_text(encoding="utf-8"))
    assert {"specs/envc.lock", "pyproject.toml", "specs/shelf.envspec"} <= set(manifest["inputs"])
    assert "up-to-date" in envc("compile", "--no-qc").output


def test_a_type_error_is_healed_on_attempt_2(project: Path, server: ChatServer) -> None:
    server.replies += [Reply(fenced('let n = len(books)\nreturn n + "one"')), Reply(fenced(GOOD))]
    result = envc("compile")
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 2
    second = server.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert "failed envc's `types` check" in second[-1]["content"]
    assert "line 2, column 8: E3004" in second[-1]["content"], "the failure at a line of the model's own body"
    entry = lock_entry(project)
    assert entry["attempt"] == 2 and entry["body"] == GOOD
    attempts = entry["provenance"]["attempts"]
    assert [a["failure"] for a in attempts] == ["types", ""]
    assert entry["request_sha"] == attempts[0]["request_sha"] != entry["accepted_request_sha"]
    assert "static" in entry["provenance"]["checks"] and "dynamic" in entry["provenance"]["checks"]
    assert "healing: 1 of 1 fills accepted (1 at attempt 2)" in result.stderr
    table = result.stderr.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("attempt"))
    assert table[header + 1].split()[:5] == ["1", "1/1", "1/1", "1/1", "0/1"], "attempt 1 failed `types`"
    assert table[header + 2].split()[-1] == "1/1", "attempt 2 passed every stage"
    assert (project / "out" / "shelf" / "environment.py").is_file()


def test_a_fill_that_fails_the_generated_tests_is_healed(project: Path, server: ChatServer) -> None:
    """Types and effects are fine, the spec's test is not: the failure goes back too."""
    server.replies += [Reply(fenced("return len(books) + 1")), Reply(fenced(GOOD))]
    result = envc("compile")
    assert result.exit_code == 0, result.output
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "failed envc's `dynamic` check" in repair and "test_counting" in repair
    assert [a["failure"] for a in lock_entry(project)["provenance"]["attempts"]] == ["dynamic", ""]


def test_a_python_body_from_the_model_is_refused_counted_and_never_run(project: Path, server: ChatServer) -> None:
    marker = project / "ran"
    server.replies += [
        Reply(fenced(f'python """\n__import__("os").system("touch {marker}")\nreturn 2\n"""')),
        Reply(fenced(GOOD)),
    ]
    result = envc("compile")
    assert result.exit_code == 0, result.output
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "failed envc's `structure` check" in repair and "the fill is a `python` body" in repair
    assert [a["failure"] for a in lock_entry(project)["provenance"]["attempts"]] == ["structure", ""]
    table = result.stderr.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("attempt"))
    assert table[header + 1].split()[:4] == ["1", "1/1", "1/1", "0/1"], "attempt 1 failed `structure`"
    assert not marker.exists()


def test_malformed_output_is_refused_after_every_attempt(project: Path, server: ChatServer) -> None:
    server.replies += [
        Reply("I would count the books, but I cannot write code."),
        Reply("```python\ndef count_books(self):\n    return len(self.books)\n```"),
        Reply(""),
    ]
    result = envc("compile", "--no-qc")
    assert result.exit_code == 1
    assert codes(result.output) == ["E6104"]
    assert "after 3 attempts" in result.stderr
    assert "attempt 1: failed `parse`" in result.stderr, "prose read as a body does not parse"
    assert "attempt 2: failed `parse`" in result.stderr and "attempt 3: failed `reply`" in result.stderr
    assert len(server.requests) == 3
    nothing_written(project)


def test_a_fill_writing_an_undeclared_field_is_refused(project: Path, server: ChatServer) -> None:
    body = fenced('books[1].title = "Dune!"\nreturn len(books)')
    server.replies += [Reply(body), Reply(body), Reply(body)]
    result = envc("compile", "--no-qc")
    assert result.exit_code == 1
    assert codes(result.output) == ["E6104"] and "`effects` check" in result.stderr
    assert "E4001 tool `count_books` writes `books` but does not declare it" in result.stderr
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "line 1, column 1: E4001" in repair
    nothing_written(project)


# --------------------------------------------------------------------------- the transport


def test_429_with_retry_after_is_waited_out(project: Path, server: ChatServer) -> None:
    server.replies += [Reply(status=429, headers={"Retry-After": "1"}), Reply(fenced(GOOD))]
    result = envc("compile", "--no-qc")
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 2
    assert "retrying in 1 s" in result.stderr


def test_500_on_every_try_writes_nothing(project: Path, server: ChatServer) -> None:
    server.replies += [Reply(status=500)] * 3
    result = envc("compile", "--no-qc")
    assert result.exit_code == 1
    assert codes(result.output) == ["E6103"] and "HTTP 500" in result.stderr
    assert len(server.requests) == 3, "one try and two retries"
    nothing_written(project)


def test_a_timeout_writes_nothing(project: Path, server: ChatServer) -> None:
    (project / "pyproject.toml").write_text(pyproject(server.url, timeout=0.5, retries=0), encoding="utf-8")
    server.replies.append(Reply(fenced(GOOD), delay=2.0))
    result = envc("compile", "--no-qc")
    assert result.exit_code == 1
    assert codes(result.output) == ["E6103"] and "(timeout)" in result.stderr
    nothing_written(project)


def test_a_slow_stream_is_cut_off_and_writes_nothing(project: Path, server: ChatServer) -> None:
    (project / "pyproject.toml").write_text(pyproject(server.url, timeout=1, retries=0), encoding="utf-8")
    server.replies.append(Reply(fenced(GOOD), pieces=20, chunk_delay=0.2))
    result = envc("compile", "--no-qc")
    assert result.exit_code == 1
    assert codes(result.output) == ["E6103"] and "did not finish within 1 s" in result.stderr
    nothing_written(project)


# --------------------------------------------------------------------------- offline and --check


def test_offline_without_a_fill_is_e6101_and_asks_nothing(project: Path, server: ChatServer) -> None:
    result = envc("compile", "--offline", "--no-qc")
    assert result.exit_code == 1 and codes(result.output) == ["E6101"]
    assert "specs/shelf.envspec:24:5" in result.stderr, "at the llm line"
    assert server.requests == []
    nothing_written(project)


def test_offline_with_a_stale_fill_is_e6102(project: Path, server: ChatServer) -> None:
    server.replies.append(Reply(fenced(GOOD)))
    assert envc("compile", "--no-qc").exit_code == 0
    spec = project / SPEC_FILE
    spec.write_text(SPEC.replace("Return the number of books", "Return how many books"), encoding="utf-8")
    before = snapshot(project / "out")
    result = envc("compile", "--offline", "--no-qc")
    assert result.exit_code == 1 and codes(result.output) == ["E6102"]
    assert len(server.requests) == 1 and snapshot(project / "out") == before


def test_check_reports_stale_entries_and_writes_nothing(project: Path, server: ChatServer) -> None:
    server.replies.append(Reply(fenced(GOOD)))
    assert envc("compile", "--no-qc").exit_code == 0
    assert envc("compile", "--check").exit_code == 0
    (project / "pyproject.toml").write_text(pyproject(server.url, temperature=0.7), encoding="utf-8")
    lock_before = (project / LOCK).read_bytes()
    result = envc("compile", "--check")
    assert result.exit_code == 1 and codes(result.output) == ["E6102"], result.output
    assert "a sampling parameter changed" in result.stderr
    assert len(server.requests) == 1 and (project / LOCK).read_bytes() == lock_before


def test_envc_lock_shows_and_refreshes_entries(project: Path, server: ChatServer) -> None:
    status = envc("lock")
    assert status.exit_code == 1 and "tool count_books  missing" in status.output
    server.replies.append(Reply(fenced(GOOD)))
    update = envc("lock", "--update", "--no-qc")
    assert update.exit_code == 0, update.output
    assert "tool count_books  filled" in update.output and "wrote specs/envc.lock" in update.stderr
    assert not (project / "out").exists(), "envc lock writes no package"
    assert "tool count_books  current" in envc("lock").output
    spec = project / SPEC_FILE
    spec.write_text(SPEC.replace("Return the number of books", "Count the books"), encoding="utf-8")
    assert "tool count_books  stale" in envc("lock").output
    server.replies.append(Reply(fenced("return len(keys(books))")))
    assert envc("lock", "--update", "--no-qc").exit_code == 0
    assert lock_entry(project)["body"] == "return len(keys(books))\n"
    server.replies.append(Reply(fenced(GOOD)))
    assert envc("lock", "--update", "--all", "--no-qc").exit_code == 0
    assert lock_entry(project)["body"] == GOOD and len(server.requests) == 3


def test_orphaned_entries_are_listed_and_dropped(project: Path, server: ChatServer) -> None:
    server.replies.append(Reply(fenced(GOOD)))
    assert envc("lock", "--update", "--no-qc").exit_code == 0
    spec = project / SPEC_FILE
    spec.write_text(SPEC.replace('    llm "Return the number of books on the shelf."', "    return len(books)"))
    status = envc("lock")
    assert "tool count_books  orphan" in status.output and status.exit_code == 1
    assert envc("lock", "--update").exit_code == 0
    assert json.loads((project / LOCK).read_text())["fills"] == {}


# --------------------------------------------------------------------------- reproducibility and secrets


def test_a_build_from_the_lock_is_identical_with_the_network_unreachable(
    project: Path, server: ChatServer, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.replies.append(Reply(fenced(GOOD)))
    assert envc("compile", "--no-qc").exit_code == 0
    built = snapshot(project / "out")
    elsewhere = tmp_path_factory.mktemp("another-machine")
    shutil.copytree(project / "specs", elsewhere / "specs")
    shutil.copy(project / "pyproject.toml", elsewhere / "pyproject.toml")
    monkeypatch.chdir(elsewhere)

    def no_network(*_args: object, **_kwargs: object) -> None:
        raise OSError("network unreachable (test)")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    result = envc("compile", "--no-qc")
    assert result.exit_code == 0, result.output
    assert snapshot(elsewhere / "out") == built, "byte for byte"
    assert len(server.requests) == 1


def test_the_api_key_appears_in_no_file_log_or_diagnostic(
    project: Path, server: ChatServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .conftest import SECRET

    monkeypatch.setenv("OPENAI_LOG", "debug")
    caplog.set_level("DEBUG")
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {SECRET}"}}).encode()
    server.replies += [Reply(fenced('return "x"')), Reply(fenced(GOOD)), Reply(status=401, raw=echo)]
    first = envc("compile")
    assert first.exit_code == 0, first.output
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}", "the key was used"
    (project / SPEC_FILE).write_text(SPEC.replace("on the shelf.", "on the shelf, please."), encoding="utf-8")
    second = envc("compile", "--no-qc")
    assert second.exit_code == 1 and codes(second.output) == ["E6103"]
    assert "[redacted]" in second.stderr, "the server echoed the key; envc did not"
    for text in (first.output, second.output, caplog.text):
        assert SECRET not in text
    for path in project.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_holes_are_filled_concurrently(project: Path, server: ChatServer) -> None:
    """Two holes, `concurrency = 2`: both requests are in flight before either is answered."""
    import threading

    tag = TWO_HOLES_TAG
    (project / SPEC_FILE).write_text(SPEC + tag, encoding="utf-8")
    (project / "pyproject.toml").write_text(pyproject(server.url, concurrency=2), encoding="utf-8")
    both_asked = threading.Barrier(2, timeout=10)

    def respond(body: dict[str, Any]) -> Reply:
        both_asked.wait()
        task = body["messages"][1]["content"].split("## The tool to write")[1]
        return Reply(fenced(GOOD if "tool count_books(" in task else TAG_BODY))

    server.respond = respond
    result = envc("compile", "--no-qc")
    assert result.exit_code == 0, result.output
    fills = json.loads((project / LOCK).read_text())["fills"]["shelf.envspec"]
    assert sorted(fills) == ["tool count_books", "tool tag_book"]
    assert "healing: 2 of 2 fills accepted" in result.stderr


TWO_HOLES_TAG = '''
tool tag_book(book_id: int, tag: str) -> Book:
    """Tag a book."""
    reads books
    writes books
    llm "Add the tag to the book unless it has it; a missing book is not_found. Return the book."
'''
TAG_BODY = """\
let book = books.get(book_id)
require book is not None else not_found(f"no book {book_id}", entity="book", field="book_id")
if tag not in book.tags:
    book.tags.append(tag)
return book
"""


def test_check_findings_of_a_locked_fill_point_at_the_spec_on_disk(project: Path, server: ChatServer) -> None:
    """A fill accepted without QC that fails the generated tests: the finding is reported
    at the failing step's line as written, though the two-line fill shifted it in the
    spliced text."""
    server.replies.append(Reply(fenced("let n = len(books) + 1\nreturn n")))
    assert envc("lock", "--update", "--no-qc").exit_code == 0
    result = envc("compile")
    assert result.exit_code == 1
    step_line = SPEC.splitlines().index("    expect count_books() == 2") + 1
    assert f"specs/shelf.envspec:{step_line}:5 - error E6002" in result.stderr, result.stderr
    assert len(server.requests) == 1, "a current entry is not asked for again"
    assert not (project / "out").exists()
