"""XML from untrusted callers, screened before a validator parses it: no entity declarations
(billion laughs, external entities), no external DTD, no nesting deeper than :data:`MAX_DEPTH`.

The screen is one pass of expat (C, iterative, linear in the text) that refuses at the first
offending declaration or element, before anything is expanded; the validators then parse with
``xmlschema``'s own defences on too (``defuse="always"``, ``allow="none"``: no resource is
fetched). Malformed XML passes the screen: the validator reports it with its line and column.
"""

from __future__ import annotations

from typing import Any
from xml.parsers import expat

from xreg.formats.model import Refused

#: Deepest element nesting accepted (the evaluator's workers set it from ``XREG_EVAL_MAX_DEPTH``).
MAX_DEPTH = 64


def screen(text: str, what: str = "the XML") -> None:
    """Refuse (:class:`Refused`) ``text`` when it declares entities, names an external DTD or
    nests elements deeper than :data:`MAX_DEPTH`."""
    parser = expat.ParserCreate()
    depth = 0

    def start(name: str, attrs: Any) -> None:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise Refused("too_deep", f"{what} nests elements deeper than {MAX_DEPTH} levels (XREG_EVAL_MAX_DEPTH)")

    def end(name: str) -> None:
        nonlocal depth
        depth -= 1

    def entity(*args: Any) -> None:
        raise Refused("unsafe", f"{what} declares an entity (<!ENTITY …>); entities are not expanded")

    def doctype(name: str, system_id: str | None, public_id: str | None, internal: int) -> None:
        if system_id or public_id:
            raise Refused("unsafe", f"{what} names an external DTD; it is not read")

    def external(*args: Any) -> int:
        raise Refused("unsafe", f"{what} references an external entity; it is not read")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.StartDoctypeDeclHandler = doctype
    parser.ExternalEntityRefHandler = external
    try:
        parser.Parse(text.encode("utf-8", "surrogatepass"), True)
    except expat.ExpatError:
        return
