"""Reading xRegistry documents (JSON or YAML files) for ``xreg-gateway import``.

Only file reading and parsing happens here; shape changes are :mod:`xreg.documents.normalise`'s
job. Parse failures become ``parsing_data`` errors whose detail names the file, line and column.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from xreg import json_limits
from xreg.errors import XRegistryError

#: File name endings that :func:`find_documents` picks up in directories (matched case-insensitively).
DOCUMENT_SUFFIXES = (".xreg.json", ".cereg", ".cereg.yaml", ".cereg.yml", ".json", ".yaml", ".yml")

_JSON_SUFFIXES = (".json",)
_YAML_SUFFIXES = (".yaml", ".yml")

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader that keeps timestamps as strings (xRegistry timestamps are RFC 3339 strings)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


def read_document(path: Path) -> dict[str, Any]:
    """Read one xRegistry document and return its top-level object.

    ``.json`` files (``.xreg.json`` included) are parsed as JSON, ``.yaml`` / ``.yml`` as YAML;
    ``.cereg`` and any other name are tried as JSON first, then as YAML. Raises
    :class:`XRegistryError` (``parsing_data``) when the content does not parse or its top level is
    not an object; the detail reads ``"<file>: line L column C: <what>"``. ``OSError`` from reading
    the file is not translated.
    """
    path = Path(path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _error(path, 1, e.start + 1, f"not UTF-8 text ({e.reason})") from None
    name = path.name.lower()
    if name.endswith(_JSON_SUFFIXES):
        doc = _parse_json(path, text)
    elif name.endswith(_YAML_SUFFIXES):
        doc = _parse_yaml(path, text)
    else:
        try:
            doc = json_limits.loads(text)
        except json_limits.JSONLimitError as e:
            raise _error(path, 1, 1, str(e)) from None
        except json.JSONDecodeError as json_error:
            if text.lstrip().startswith(("{", "[")):
                try:
                    doc = _plain_keys(yaml.load(text, Loader=_Loader))
                except yaml.YAMLError:
                    raise _error(path, json_error.lineno, json_error.colno, json_error.msg) from None
            else:
                doc = _parse_yaml(path, text)
    if not isinstance(doc, dict):
        kind = "null" if doc is None else "an array" if isinstance(doc, list) else type(doc).__name__
        raise _error(path, 1, 1, f"the top level is {kind}, not an object")
    return doc


def find_documents(paths: list[Path]) -> list[Path]:
    """Expand ``paths`` into document files.

    Files named explicitly are kept whatever their name; directories are searched recursively for
    names ending in :data:`DOCUMENT_SUFFIXES` (so ``README.md``, ``SHA256SUMS`` and the like are
    skipped), ignoring hidden files and directories, in sorted order. Duplicates are dropped; a
    path that does not exist raises ``FileNotFoundError``.
    """
    found: list[Path] = []
    for given in map(Path, paths):
        if given.is_dir():
            found.extend(
                p for p in sorted(given.rglob("*"))
                if p.is_file()
                and p.name.lower().endswith(DOCUMENT_SUFFIXES)
                and not any(part.startswith(".") for part in p.relative_to(given).parts)
            )
        elif given.exists():
            found.append(given)
        else:
            raise FileNotFoundError(f"no such file or directory: {given}")
    return list(dict.fromkeys(found))


def _parse_json(path: Path, text: str) -> Any:
    try:
        return json_limits.loads(text)
    except json_limits.JSONLimitError as e:
        raise _error(path, 1, 1, str(e)) from None
    except json.JSONDecodeError as e:
        raise _error(path, e.lineno, e.colno, e.msg) from None


def _parse_yaml(path: Path, text: str) -> Any:
    try:
        return json_limits.check(_plain_keys(yaml.load(text, Loader=_Loader)))
    except (RecursionError, json_limits.JSONLimitError) as e:
        raise _error(path, 1, 1, str(e) if isinstance(e, ValueError) else "the document is nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        what = " ".join(str(x) for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        raise _error(path, line, column, what or str(e).splitlines()[0]) from None


def _plain_keys(value: Any) -> Any:
    """YAML may give non-string mapping keys (``1.0:``); xRegistry keys are strings."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _plain_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_keys(v) for v in value]
    return value


def _error(path: Path, line: int, column: int, what: str) -> XRegistryError:
    return XRegistryError(
        "parsing_data", "/", detail=f"{path}: line {line} column {column}: {what}", source=str(path)
    )
