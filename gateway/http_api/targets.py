"""What a request path of the xRegistry HTTP API addresses (core/http.md, "HTTP API Patterns").

Paths are relative to the API prefix: ``/``, the root APIs (``/model``, ``/capabilities``,
``/export``, ``/openapi.json``, ``/.xregistry``), the ``/modelsource`` entity, then
``/<GROUPS>[/<GID>[/<RESOURCES>[/<RID>[$details] [/meta | /versions[/<VID>[$details]]]]]]``.
Group and resource types come from the model; IDs must be valid IDs (``malformed_id``);
``$details`` is allowed on resources and versions only (``bad_details``). A path below a root API
is an API this server does not have (``api_not_found``); a collection name the model does not
define (``/widgets``, ``/dirs/d1/widgets``) names a collection that does not exist, as does any
other unknown path below a group type (``not_found``, core/spec.md: ``api_not_found`` is for the
optional APIs of core/http.md a server does not offer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from xreg.errors import XRegistryError
from xreg.ids import check_id
from xreg.model.registry_model import RegistryModel, ResourceDef
from xreg.xid import Xid

DETAILS = "$details"
#: Root-level APIs besides the registry entity and its group collections.
ROOT_APIS = ("capabilities", "capabilitiesoffered", "model", "export", "openapi.json", ".xregistry")

#: The stand-alone ``modelsource`` entity (core/http.md "GET /modelsource", "PUT /modelsource").
MODEL_SOURCE = "modelsource"

#: Target kinds, from the registry down.
KINDS = ("root", "api", "modelsource", "groups", "group", "resources", "resource", "meta", "versions", "version")


T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """The entity, collection or API a request path addresses."""

    kind: str
    path: str
    api: str | None = None
    gtype: str | None = None
    gid: str | None = None
    rtype: str | None = None
    rid: str | None = None
    vid: str | None = None
    details: bool = False
    rdef: ResourceDef | None = None

    # The parts a route has, typed: handlers of a route use these (a missing one is a bug).
    @property
    def group_type(self) -> str:
        return _part(self.gtype, "group type", self)

    @property
    def group_id(self) -> str:
        return _part(self.gid, "group id", self)

    @property
    def resource_type(self) -> str:
        return _part(self.rtype, "resource type", self)

    @property
    def resource_id(self) -> str:
        return _part(self.rid, "resource id", self)

    @property
    def version_id(self) -> str:
        return _part(self.vid, "version id", self)

    @property
    def resource_def(self) -> ResourceDef:
        return _part(self.rdef, "resource model", self)

    @property
    def xid(self) -> str:
        """The XID of the addressed entity or collection (``/g/gid/r`` for a collection)."""
        parts = [p for p in (self.gtype, self.gid, self.rtype, self.rid) if p is not None]
        if self.kind == "meta":
            parts.append("meta")
        elif self.kind in ("versions", "version"):
            parts.append("versions")
            if self.vid is not None:
                parts.append(self.vid)
        return "/" + "/".join(parts)

    @property
    def resource_xid(self) -> str:
        return str(Xid(self.gtype, self.gid, self.rtype, self.rid))

    @property
    def is_collection(self) -> bool:
        return self.kind in ("groups", "resources", "versions")

    @property
    def ctype(self) -> str:
        """The collection type of the addressed collection, or of the addressed entity."""
        parts = [p for p in (self.gtype, self.rtype) if p is not None]
        if self.kind in ("versions", "version"):
            parts.append("versions")
        return "/".join(parts)

    @property
    def parent_xid(self) -> str:
        """For a collection: the XID of the entity owning it."""
        if self.kind == "resources":
            return str(Xid(self.gtype, self.gid))
        return self.resource_xid if self.kind == "versions" else "/"

    @property
    def document_view(self) -> bool:
        """Whether the request is about a resource's / version's document, not its metadata."""
        return self.kind in ("resource", "version") and bool(self.rdef and self.rdef.hasdocument) and not self.details


def _not_found(path: str) -> XRegistryError:
    """An unknown path below a group type of the model: no such entity or collection
    (``api_not_found`` is only for APIs the server does not have, core/http.md)."""
    return XRegistryError("not_found", path)


def _check_details(segs: list[str], path: str) -> bool:
    """Whether the path ends in ``$details`` (allowed after a resource or version id only)."""
    for i, seg in enumerate(segs):
        if "$" not in seg:
            continue
        if i == len(segs) - 1 and seg.endswith(DETAILS) and seg.count("$") == 1:
            if i in (3, 5):
                return True
            raise XRegistryError("bad_details", path, detail="$details is only allowed on resources and versions")
        raise XRegistryError("malformed_id", path, id=seg, detail=f'"{seg}": "$" is not allowed in an ID')
    return False


def _part(value: T | None, what: str, target: Target) -> T:
    if value is None:
        raise AssertionError(f"{target.kind} target {target.path!r} has no {what}")
    return value


def parse_target(path: str, model: RegistryModel) -> Target:
    """The target of ``path`` (relative to the API prefix); raises ``api_not_found``,
    ``not_found``, ``bad_details`` or ``malformed_id``."""
    path = "/" + path.strip("/")
    segs = [] if path == "/" else path[1:].split("/")
    if not segs:
        return Target("root", "/")
    if len(segs) == 1 and segs[0] == MODEL_SOURCE:
        return Target("modelsource", path, api=MODEL_SOURCE)
    if len(segs) == 1 and segs[0] in ROOT_APIS:
        return Target("api", path, api=segs[0])
    if segs[0] in ROOT_APIS or segs[0] == MODEL_SOURCE:
        raise XRegistryError("api_not_found", path)  # nothing is served below a root API
    details = _check_details(segs, path)
    if details:
        segs[-1] = segs[-1][: -len(DETAILS)]
    gtype = segs[0]
    gdef = model.group(gtype)
    if gdef is None:
        raise XRegistryError("not_found", "/" + gtype, detail=f"the model has no group type {gtype!r}")
    if len(segs) == 1:
        return Target("groups", path, gtype=gtype)
    gid = check_id(segs[1], subject=path, attribute=gdef.id_attribute)
    if len(segs) == 2:
        return Target("group", path, gtype=gtype, gid=gid)
    rtype = segs[2]
    rdef = gdef.resources.get(rtype)
    if rdef is None:
        raise XRegistryError("not_found", f"/{gtype}/{gid}/{rtype}",
                             detail=f"the model has no resource type {rtype!r} in {gtype!r}")
    if len(segs) == 3:
        return Target("resources", path, gtype=gtype, gid=gid, rtype=rtype, rdef=rdef)
    rid = check_id(segs[3], subject=path, attribute=rdef.id_attribute)

    def below_resource(kind: str, vid: str | None = None, details: bool = False) -> Target:
        return Target(kind, path, gtype=gtype, gid=gid, rtype=rtype, rid=rid, rdef=rdef, vid=vid, details=details)

    if len(segs) == 4:
        return below_resource("resource", details=details)
    if segs[4] == "meta" and len(segs) == 5:
        return below_resource("meta")
    if segs[4] != "versions" or len(segs) > 6:
        raise _not_found(path)
    if len(segs) == 5:
        return below_resource("versions")
    vid = check_id(segs[5], subject=path, attribute="versionid")
    return below_resource("version", vid=vid, details=details)
