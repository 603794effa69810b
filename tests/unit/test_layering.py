"""The layering of the code base, read from its source with ``ast``:

* four layers, each importing only from itself and the layers below it (imports inside
  functions count too): the service roof (``gateway``: the ASGI app, the CLI, the HTTP routes
  — xRegistry API, bulk rows, GraphQL's HTTP binding — and request policy) → GraphQL
  (``resolvers``) → sources (``adapters``) → the xRegistry engine (:data:`ENGINE`);
* the top-level packages form no cycle, and each lies in one layer;
* the bulk rows read through the sources, not through GraphQL;
* the storage layer stands on its own: no module of ``xreg/storage`` imports the registry
  engine (``xreg.registry``), the sources (``adapters``) or GraphQL (``resolvers``);
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
PACKAGES = {"gateway": REPO, "resolvers": REPO, "adapters": REPO, "xreg": REPO, "pyspark_xregistry": REPO / "spark" / "src"}

#: The engine's package, and the modules of the engine by name prefix.
ENGINE_PACKAGE = "xreg"
ENGINE = ("xreg.errors", "xreg.xid", "xreg.ids", "xreg.json_encoding", "xreg.json_limits",
          "xreg.config", "xreg.metrics", "xreg.tracing", "xreg.registry", "xreg.storage",
          "xreg.formats", "xreg.model", "xreg.documents", "xreg.events")

#: The layers, top to bottom, by module name prefix (the longest prefix decides).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("service roof", ("gateway",)),
    ("GraphQL", ("resolvers",)),
    ("sources", ("adapters",)),
    ("engine", (ENGINE_PACKAGE, *ENGINE)),
]

#: Function-level imports of project modules that are there on purpose, with the reason.
DEFERRED: dict[tuple[str, str], str] = {
    ("gateway.cli", "gateway.app"): "the CLI loads the ASGI app (strawberry, Starlette) only to serve",
    ("gateway.cli", "gateway.auth"): "hash-key needs no app",
    ("gateway.cli", "xreg.documents.normalise"): "only import reads documents",
    ("gateway.cli", "xreg.documents.reader"): "only import reads documents",
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


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module``'s layer (``None``: in none)."""
    found = [(len(p), i) for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes if _within(module, p)]
    return max(found)[1] if found else None


def package_of(module: str) -> str:
    """The top-level package ``module`` belongs to (an engine module still under ``gateway/``
    counts as the engine's)."""
    return ENGINE_PACKAGE if any(_within(module, p) for p in ENGINE) else module.split(".")[0]


def _service_modules() -> list[str]:
    return [m for m in MODULES if not m.startswith("pyspark_xregistry")]


def test_every_module_is_in_a_layer() -> None:
    assert [m for m in _service_modules() if layer_of(m) is None] == []


def test_imports_only_go_down() -> None:
    upward = []
    for module in _service_modules():
        top, inner = _imports(module)
        here = layer_of(module)
        assert here is not None
        for target in sorted(top | inner):
            there = layer_of(target)
            if there is not None and there < here:
                upward.append(f"{module} ({LAYERS[here][0]}) -> {target} ({LAYERS[there][0]})")
    assert upward == []


def test_packages_form_no_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        top, inner = _imports(module)
        graph.setdefault(package_of(module), set()).update(package_of(t) for t in top | inner)
    for package, targets in graph.items():
        targets.discard(package)
    order = sorted(graph, key=lambda p: min(layer_of(m) or 0 for m in MODULES if package_of(m) == p))
    seen: set[str] = set()
    for package in reversed(order):  # bottom up: a package imports only packages seen already
        assert graph[package] <= seen, f"{package} imports {sorted(graph[package] - seen)} from above"
        seen.add(package)


def test_each_package_is_in_one_layer() -> None:
    layers: dict[str, set[str]] = {}
    for module in _service_modules():
        index = layer_of(module)
        assert index is not None
        layers.setdefault(package_of(module), set()).add(LAYERS[index][0])
    assert {p: ls for p, ls in layers.items() if len(ls) != 1} == {}


def test_the_connector_imports_nothing_of_the_service() -> None:
    # pyspark_xregistry is a distribution of its own: it talks to the gateway over HTTP only
    found = {(m, t) for m in MODULES if m.startswith("pyspark_xregistry")
             for t in set().union(*_imports(m)) if not t.startswith("pyspark_xregistry")}
    assert found == set()


def test_bulk_rows_read_through_the_sources() -> None:
    top, inner = _imports("gateway.bulk")
    assert {t for t in top | inner if t.startswith("resolvers")} == set()


def test_storage_imports_nothing_above_it() -> None:
    offending = []
    for module in MODULES:
        if module.startswith("xreg.storage"):
            top, inner = _imports(module)
            offending += [(module, t) for t in top | inner
                          if t.startswith(("xreg.registry", "adapters", "resolvers", "gateway.http_api"))
                          or layer_of(t) != layer_of(module)]
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
