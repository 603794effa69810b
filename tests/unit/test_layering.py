"""The layering of the code base, read from its source with ``ast``:

* the storage layer stands on its own: no module of ``gateway/storage`` imports the registry
  engine (``gateway.registry``), the sources (``adapters``) or GraphQL (``resolvers``);
* the imports between the project's modules form no cycle (imports under ``TYPE_CHECKING``
  count too: a cycle hidden there is still a cycle of the design);
* an import inside a function is allowed only for the reasons listed in :data:`DEFERRED` (never
  to dodge a cycle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.corpus import REPO

#: The project's packages and the folders their import roots are in (the Spark connector is a
#: distribution of its own under spark/, with a src layout).
PACKAGES = {"gateway": REPO, "resolvers": REPO, "adapters": REPO, "pyspark_xregistry": REPO / "spark" / "src"}

#: Function-level imports of project modules that are there on purpose, with the reason.
DEFERRED: dict[tuple[str, str], str] = {
    ("gateway.cli", "gateway.app"): "the CLI loads the ASGI app (strawberry, Starlette) only to serve",
    ("gateway.cli", "gateway.auth"): "hash-key needs no app",
    ("gateway.cli", "gateway.documents.normalise"): "only import reads documents",
    ("gateway.cli", "gateway.documents.reader"): "only import reads documents",
    ("gateway.cli", "gateway.request_limits"): "the server's head limits (uvicorn's protocol) only to serve",
    ("gateway.cli", "gateway.forwarded"): "whose forwarded headers are believed matters only to serve",
}


def _modules() -> dict[str, Path]:
    out = {}
    for package, root in PACKAGES.items():
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = _modules()


def _target(node: ast.ImportFrom | ast.Import, module: str) -> Iterator[str]:
    """The project modules an import statement names (``from a import b`` may name module a.b)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")[: len(module.split(".")) - node.level + (1 if _is_package(module) else 0)]
            base = ".".join([*package, *([base] if base else [])])
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            yield name


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _imports(module: str) -> tuple[set[str], set[str]]:
    """(module-level imports, imports inside functions) of one module, as project modules."""
    tree = ast.parse(MODULES[module].read_text())
    top: set[str] = set()
    inner: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                (inner if in_function else top).update(t for t in _target(child, module) if t != module)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return top, inner


def test_storage_imports_nothing_above_it() -> None:
    offending = []
    for module in MODULES:
        if module.startswith("gateway.storage"):
            top, inner = _imports(module)
            offending += [(module, t) for t in top | inner
                          if t.startswith(("gateway.registry", "adapters", "resolvers", "gateway.http_api"))]
    assert offending == []


def test_module_imports_form_no_cycle() -> None:
    graph = {m: _imports(m)[0] for m in MODULES}
    # a package's __init__ importing its own submodules is how packages expose them, not a cycle
    for m, targets in graph.items():
        graph[m] = {t for t in targets if not t.startswith(m + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt):], nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m, [m])
    assert cycles == []


def test_function_level_imports_are_only_the_deliberate_ones() -> None:
    found = {(m, t) for m in MODULES for t in _imports(m)[1]}
    assert found - set(DEFERRED) == set()
    assert set(DEFERRED) - found == set(), "an allowlisted deferred import no longer exists"
