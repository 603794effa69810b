"""The GraphQL libraries are used through their public extension points only, read with ``ast``.

An import of a module under ``strawberry`` or ``graphql`` (graphql-core) is allowed when the
module is one of :data:`PUBLIC_MODULES` and, for ``from M import N``, ``N`` is in ``M.__all__``
(when ``M`` defines one) and not in :data:`INTERNAL_NAMES`. Imports inside functions and under
``TYPE_CHECKING`` count too. Anything else leans on a library's internals, which a minor release
may move or change (``make test-newest`` runs the GraphQL tests on the newest releases).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from tests.corpus import REPO

#: The folders of the project's packages (the Spark connector has a src layout under spark/).
PACKAGE_DIRS = ("gateway", "resolvers", "adapters", "xreg", "spark")

#: The libraries the rule applies to (an import's first dotted part).
LIBRARIES = ("strawberry", "graphql")

#: The modules whose exports are the libraries' documented public interface.
PUBLIC_MODULES = frozenset({
    "strawberry", "strawberry.types", "strawberry.scalars", "strawberry.extensions",
    "strawberry.dataloader", "strawberry.schema", "strawberry.schema.config", "strawberry.permission",
    "strawberry.exceptions", "strawberry.relay", "strawberry.subscriptions",
    "graphql", "graphql.language", "graphql.execution", "graphql.validation", "graphql.type",
    "graphql.utilities", "graphql.error", "graphql.pyutils",
})

#: Names a public module lists in ``__all__`` that are still its machinery, not an interface:
#: strawberry's DataLoader is used through its constructor, load, load_many, prime and clear.
INTERNAL_NAMES = frozenset({
    ("strawberry.dataloader", name)
    for name in ("Batch", "LoaderTask", "dispatch", "dispatch_batch", "get_current_batch", "should_create_new_batch")
})


def _exports(module: str) -> frozenset[str] | None:
    """``module.__all__`` (``None`` when it defines none)."""
    names = getattr(importlib.import_module(module), "__all__", None)
    return None if names is None else frozenset(names)


def offenders(source: str, filename: str) -> list[str]:
    """Each import in ``source`` that breaks the rule, as ``filename:line module.name``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in LIBRARIES and alias.name not in PUBLIC_MODULES:
                    found.append(f"{filename}:{node.lineno} {alias.name}")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            module = node.module
            if module.split(".")[0] not in LIBRARIES:
                continue
            exports = _exports(module) if module in PUBLIC_MODULES else None
            for alias in node.names:
                public = (module in PUBLIC_MODULES and alias.name != "*"
                          and (exports is None or alias.name in exports)
                          and (module, alias.name) not in INTERNAL_NAMES)
                if not public:
                    found.append(f"{filename}:{node.lineno} {module}.{alias.name}")
    return found


def _sources() -> list[Path]:
    return sorted(p for d in PACKAGE_DIRS for p in (REPO / d).rglob("*.py"))


def test_the_rule_reports_private_imports() -> None:
    source = (
        "import strawberry\n"
        "from strawberry.types import Info\n"
        "from graphql import GraphQLError, get_operation_ast\n"
        "from strawberry.types.graphql import OperationType\n"  # a module that is not public
        "import graphql.execution.executor\n"
        "from graphql.pyutils import is_awaitable, not_exported_name\n"  # not in __all__
        "from strawberry.dataloader import DataLoader, Batch\n"  # listed, but machinery
        "def f():\n"
        "    from strawberry.utils.operation import get_first_operation\n"  # inside a function
        "from .graphql import anything\n"  # a relative import is the project's own
        "import graphql_relay\n"  # another distribution
    )
    assert offenders(source, "m.py") == [
        "m.py:4 strawberry.types.graphql.OperationType",
        "m.py:5 graphql.execution.executor",
        "m.py:6 graphql.pyutils.not_exported_name",
        "m.py:7 strawberry.dataloader.Batch",
        "m.py:9 strawberry.utils.operation.get_first_operation",
    ]


def test_the_packages_import_only_public_names() -> None:
    assert _sources(), "no sources found"
    found = [o for path in _sources() for o in offenders(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))]
    assert not found, "imports of non-public names:\n" + "\n".join(found)
