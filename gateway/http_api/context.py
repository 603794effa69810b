"""One request to the API: its target, flags and the registry, with the parsing helpers the
handlers share (inline tree, filters, sort, the entity's record)."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from gateway.http_api.flags import Flags
from gateway.http_api.inline import Inline, Level, parse_inline
from gateway.http_api.render import Renderer
from gateway.http_api.targets import Target
from xreg.config import Settings
from xreg.errors import XRegistryError
from xreg.model.registry_model import RegistryModel
from xreg.registry.filters import Filters, parse_filters, parse_sort
from xreg.registry.reads import collection_tree
from xreg.registry.service import LocalRegistry
from xreg.storage.records import EntityRecord
from xreg.storage.semantics import Sort


@dataclass
class Call:
    """A request being handled."""

    request: Request
    target: Target
    flags: Flags
    registry: LocalRegistry
    settings: Settings
    request_id: str
    #: The ``xregcorrelationid`` of the write this request committed (``xRegistry-xregcorrelationid``).
    correlation_id: str | None = None

    @property
    def model(self) -> RegistryModel:
        return self.registry.model

    @property
    def subject(self) -> str:
        return self.target.path

    def renderer(self) -> Renderer:
        return Renderer(self.registry, self.flags)

    def level(self) -> Level:
        """The model level of the entities this request returns (for ``inline``)."""
        t = self.target
        if t.kind in ("root", "api"):
            return ("registry",)
        if t.kind in ("groups", "group"):
            return ("group", t.group_type)
        if t.kind in ("resources", "resource"):
            return ("resource", t.group_type, t.resource_type)
        if t.kind in ("versions", "version"):
            return ("version", t.group_type, t.resource_type)
        return ("meta",)

    def inline(self, default: list[str] | None = None, model: RegistryModel | None = None) -> Inline:
        """The ``inline`` tree (``default`` when the flag is absent), against ``model`` (default:
        the registry's; a write installing a model names the new one)."""
        values = self.flags.inline if "inline" in self.flags.given else (default or [])
        return parse_inline(values, model or self.model, self.level(), self.subject)

    def filters(self, ctype: str, model: RegistryModel | None = None) -> Filters | None:
        """The parsed ``filter`` flags, relative to the entities of ``ctype`` (of ``model``,
        default: the registry's; a write installing a model names the new one)."""
        if not self.flags.filter:
            return None
        return parse_filters(self.flags.filter, subject=self.subject,
                             collections=collection_tree(model or self.model, ctype))

    def sort(self, ctype: str) -> Sort | None:
        if self.flags.sort is None:
            return None
        return parse_sort(self.flags.sort, subject=self.subject, collections=collection_tree(self.model, ctype))

    async def record(self, xid: str | None = None) -> EntityRecord:
        """The stored record of ``xid`` (default: the target), or ``not_found``."""
        xid = xid or (self.target.resource_xid if self.target.kind == "meta" else self.target.xid)
        rec = await self.registry.store.get(xid)
        if rec is None or rec.xid != xid:
            raise XRegistryError("not_found", xid)
        return rec
