"""A spec whose state is a 2 MB JSON database, in the two forms a spec can hold it:
inlined as a literal default (before issue 14's state files) and `from "db/NAME.json"`
(after), side by side: `envc check`, `envc compile` with full QC, the size of the
generated `environment.py` (and of its `data/` folder), and the import time of the
generated package.

    python benchmarks/state_database.py              # 2 MB, min of 3 checks and imports, 1 compile
    python benchmarks/state_database.py --runs 5 --compiles 2 --megabytes 1

The database (users, products, orders with nested lists and maps) is built from a fixed
seed in a temporary folder, so every run measures the same bytes; each form is its own
project (`pyproject.toml` with `[tool.envc] output`, its own mypy cache), compiled by
this tree's compiler. Every figure is a fresh process's wall time, the min of N (the
machine is shared: the min is the least disturbed); the forms alternate so load hits
both alike. "import" is `import shop_db.environment` in a new interpreter, timed inside
it (without the interpreter's own start-up): first with no bytecode (Python compiles the
module, as on the first import after `envc compile`), then with its cached bytecode.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TABLES = ("users", "products", "orders")

SPEC_HEAD = """\
environment shop_db:
    title "Shop database"
    doc "A shop whose state is a database of users, products and orders."

enum Status:
    placed, paid, shipped, returned

record Address:
    street: str
    city: str
    country: str

record User:
    id: int
    name: str
    email: str
    addresses: list[Address] = []
    tags: set[str] = []
    settings: map[str, str] = {}

record Product:
    sku: str
    title: str
    price: int
    stock: int
    attrs: map[str, str] = {}

record Line:
    sku: str
    quantity: int
    price: int

record Order:
    id: int
    user_id: int
    status: Status = Status.placed
    lines: list[Line] = []
    notes: list[str] = []

state:
"""
SPEC_TOOLS = '''
tool get_user(user_id: int) -> User:
    """A user by id."""
    let user = users.get(user_id)
    require user is not None else not_found(f"user {user_id} does not exist", entity="user", field="user_id")
    return user

tool orders_of(user_id: int) -> list[int]:
    """The ids of a user's orders."""
    let found: list[int] = []
    for order in values(orders):
        if order.user_id == user_id:
            found.append(order.id)
    return found

tool ship(order_id: int) -> Order:
    """Mark a paid order shipped."""
    let order = orders.get(order_id)
    require order is not None else not_found(f"order {order_id} does not exist", entity="order", field="order_id")
    require order.status == Status.paid else conflict(f"order {order_id} is {order.status}, not paid", entity="order")
    order.status = Status.shipped
    return order
'''
TYPES = {"users": "map[int, User]", "products": "map[str, Product]", "orders": "map[int, Order]"}
WORDS = "amber birch cedar delta ember fjord grove harbor iris juniper kestrel lumen maple north opal".split()


def database(megabytes: float, seed: int = 14) -> dict[str, dict[str, Any]]:
    """Users, products and orders, about `megabytes` MB of JSON, the same for a seed."""
    rng = random.Random(seed)
    word = lambda: rng.choice(WORDS)  # noqa: E731 - a local shorthand
    users: dict[str, Any] = {}
    products: dict[str, Any] = {}
    orders: dict[str, Any] = {}
    target = int(megabytes * 1_000_000)
    size = 0
    while size < target:
        uid = len(users) + 1
        users[str(uid)] = {
            "id": uid,
            "name": f"{word().title()} {word().title()}",
            "email": f"{word()}.{uid}@example.com",
            "addresses": [
                {"street": f"{rng.randint(1, 999)} {word().title()} St", "city": word().title(), "country": "NL"}
                for _ in range(rng.randint(1, 2))
            ],
            "tags": sorted({word() for _ in range(rng.randint(0, 3))}),
            "settings": {"lang": rng.choice(["en", "nl", "de"]), "theme": word()},
        }
        if uid % 2:
            sku = f"SKU-{len(products) + 1:05d}"
            products[sku] = {
                "sku": sku,
                "title": f"{word().title()} {word()}",
                "price": rng.randint(100, 99_999),
                "stock": rng.randint(0, 500),
                "attrs": {"colour": word(), "size": rng.choice(["S", "M", "L"])},
            }
        for _ in range(2):
            oid = len(orders) + 1
            orders[str(oid)] = {
                "id": oid,
                "user_id": rng.randint(1, uid),
                "status": rng.choice(["placed", "paid", "shipped", "returned"]),
                "lines": [
                    {"sku": rng.choice(list(products)), "quantity": rng.randint(1, 5), "price": rng.randint(100, 9_999)}
                    for _ in range(rng.randint(1, 4))
                ],
                "notes": [f"{word()} {word()}" for _ in range(rng.randint(0, 2))],
            }
        if uid % 100 == 0:
            size = sum(len(json.dumps(t)) for t in (users, products, orders))
    return {"users": users, "products": products, "orders": orders}


def envspec_literal(value: Any) -> str:
    """An envspec literal of a JSON value (the data holds no booleans and no nulls)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {envspec_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(envspec_literal(v) for v in value) + "]"
    return json.dumps(value)


def inline_field(name: str, table: dict[str, Any]) -> str:
    """`name: TYPE = {...}`, one entry per line (a literal may span lines inside brackets)."""
    entries = ",\n".join(f"        {json.dumps(k)}: {envspec_literal(v)}" for k, v in table.items())
    return f"    {name}: {TYPES[name]} = {{\n{entries}\n    }}\n"


def write_project(folder: Path, db: dict[str, dict[str, Any]], inline: bool) -> Path:
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "bench"\n\n[tool.envc]\noutput = "out"\n')
    if inline:
        fields = "".join(inline_field(name, db[name]) for name in TABLES)
    else:
        (folder / "db").mkdir()
        for name in TABLES:
            (folder / "db" / f"{name}.json").write_text(json.dumps(db[name]), encoding="utf-8")
        fields = "".join(f'    {name}: {TYPES[name]} from "db/{name}.json"\n' for name in TABLES)
    spec = folder / "shop_db.envspec"
    spec.write_text(SPEC_HEAD + fields + SPEC_TOOLS, encoding="utf-8")
    return spec


def run(project: Path, *args: str) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ENVC_PARSE_CACHE": "0",
        "XDG_CACHE_HOME": str(project / ".cache"),
    }
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=project, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {project}:\n{(done.stdout + done.stderr)[-3000:]}")
    return seconds


def timed_in_python(project: Path, statement: str, bytecode: bool) -> float:
    """`statement` in a fresh interpreter in the output folder, timed inside it. Without
    `bytecode` the package's `__pycache__` is removed first and none is written (a first
    import: Python compiles the modules); with it, the cached bytecode is used."""
    env = dict(os.environ)
    if not bytecode:
        for cache in (project / "out").rglob("__pycache__"):
            shutil.rmtree(cache)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], cwd=project / "out", env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{statement} failed in {project}:\n{done.stderr[-3000:]}")
    return float(done.stdout.strip())


MEASURES = {
    "import": ("import shop_db.environment", False),
    "import_cached": ("import shop_db.environment", True),
    "first": ("import shop_db.environment as m; m.Environment()", True),
}
"""Figure -> (statement, whether cached bytecode is used)."""


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=2.0, help="size of the JSON database")
    parser.add_argument("--runs", type=int, default=3, help="runs of `envc check` and of the imports (min)")
    parser.add_argument("--compiles", type=int, default=1, help="runs of `envc compile` with full QC (min)")
    options = parser.parse_args()
    load = os.getloadavg()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    db = database(options.megabytes)
    json_bytes = sum(len(json.dumps(db[name])) for name in TABLES)
    print(
        f"database: {len(db['users']):,} users, {len(db['products']):,} products, {len(db['orders']):,} orders, "
        f"{json_bytes / 1e6:.2f} MB of JSON"
    )
    with tempfile.TemporaryDirectory(prefix="envc-state-db-") as temp:
        forms = {"before (inlined)": True, "after (from file)": False}
        projects = {label: Path(temp) / ("inline" if inline else "files") for label, inline in forms.items()}
        specs = {label: write_project(projects[label], db, inline) for label, inline in forms.items()}
        figures: dict[str, dict[str, float]] = {label: {} for label in forms}
        for label in forms:
            figures[label]["spec"] = specs[label].stat().st_size
        for _ in range(options.runs):
            for label in forms:
                seconds = run(projects[label], "-m", "compiler.cli", "check", specs[label].name)
                figures[label]["check"] = min(figures[label].get("check", seconds), seconds)
        for _ in range(options.compiles):
            for label in forms:
                seconds = run(projects[label], "-m", "compiler.cli", "compile", "--force", specs[label].name)
                figures[label]["compile"] = min(figures[label].get("compile", seconds), seconds)
        for label in forms:
            package = projects[label] / "out" / "shop_db"
            figures[label]["module"] = (package / "environment.py").stat().st_size
            figures[label]["data"] = folder_bytes(package / "data")
        for label in forms:
            timed_in_python(projects[label], "import shop_db.environment", True)  # writes the bytecode
        for _ in range(options.runs):
            for key, (statement, bytecode) in MEASURES.items():
                for label in forms:
                    seconds = timed_in_python(projects[label], statement, bytecode)
                    if not bytecode:
                        timed_in_python(projects[label], "import shop_db.environment", True)  # again, for the next
                    figures[label][key] = min(figures[label].get(key, seconds), seconds)
    before, after = figures["before (inlined)"], figures["after (from file)"]
    rows = [
        ("spec file", "spec", "MB"),
        ("envc check", "check", "s"),
        ("envc compile (full QC)", "compile", "s"),
        ("generated environment.py", "module", "MB"),
        ("generated data/ folder", "data", "MB"),
        ("import, first (no bytecode)", "import", "s"),
        ("import, bytecode cached", "import_cached", "s"),
        ("  + one Environment()", "first", "s"),
    ]
    print(f"\n{'':28} {'before (inlined)':>18} {'after (from file)':>18} {'after / before':>15}")
    for title, key, unit in rows:
        scale = 1e6 if unit == "MB" else 1.0
        ratio = f"{after[key] / before[key]:.3f}" if before[key] else "-"
        print(f"{title:28} {before[key] / scale:>15.3f} {unit:2} {after[key] / scale:>15.3f} {unit:2} {ratio:>15}")
    print(f"\nruns: check and imports min of {options.runs}, compile min of {options.compiles}")


if __name__ == "__main__":
    main()
