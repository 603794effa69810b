"""The errors the gateway reports to clients: one hierarchy rooted in :class:`GatewayError`.

* :class:`XRegistryError` — every failure of the registry, whose ``type`` is one of the spec's
  error names (``invalid_attribute``, ``mismatched_epoch``, …; "Error Processing" in
  core/spec.md). The HTTP binding's own errors (core/http.md: ``api_not_found``,
  ``missing_body``, …) and the gateway's few extensions (``payload_too_large``,
  ``unsupported_media_type``) are the same class.
* ``gateway.auth.AuthError`` — refused credentials (``unauthorized``) or scopes (``forbidden``).
* :class:`InstanceMismatch` — a change-feed checkpoint of another registry instance
  (``instance_mismatch``), an :class:`XRegistryError` of the gateway's own.
* :class:`UserInputError` — a GraphQL argument no spec error type describes (a cursor, a node
  id, a page size): ``BAD_USER_INPUT``.
* :class:`GraphQLRequestError` — a GraphQL request refused before it runs (persisted queries,
  trusted documents, malformed requests), with its status per response media type.

Bindings render them by their :attr:`GatewayError.code`: the HTTP API as an RFC 9457 problem
document, GraphQL as an error with ``extensions.code``. Any other exception is a bug.
"""

from __future__ import annotations

import re
from typing import Any

SPEC_ERROR_BASE = "https://github.com/xregistry/spec/blob/main/core/spec.md#"

# (HTTP status, title template) per error type, taken from core/spec.md.
SPEC_ERRORS: dict[str, tuple[int, str]] = {
    'action_not_supported': (405, 'The specified action (<action>) is not supported for: <subject>.'),
    'ancestor_circular_reference': (400, 'For "<subject>", the request would create a circular list of ancestors: <list>.'),
    'bad_defaultversionid': (400, 'For "<subject>", an error was found in the "defaultversionid" value specified (<value>): <error_detail>.'),
    'bad_details': (400, 'Use of "$details" in this context is not allowed: <subject>.'),
    'bad_filter': (400, 'For "<subject>", an error was found in "filter" value (<value>): <error_detail>.'),
    'bad_flag': (400, 'The specified flag (<flag>) is not allowed in this context: <subject>.'),
    'bad_ignore': (400, 'For "<subject>", an error was found in "ignore" value (<value>): <error_detail>.'),
    'bad_inline': (400, 'For "<subject>", an error was found in "inline" value (<value>): <error_detail>.'),
    'bad_request': (400, '<error_detail>.'),
    'bad_sort': (400, 'For "<subject>", an error was found in "sort" value (<value>): <error_detail>.'),
    'cannot_doc_xref': (400, 'Retrieving the document view of a Version for "<subject>" is not allowed because it uses "xref".'),
    'capability_error': (400, 'There was an error in the capabilities provided: <error_detail>.'),
    'capability_missing_value': (400, 'The "<name>" capability needs to contain "<value>".'),
    'capability_unknown': (400, 'Unknown capability specified: <field>.'),
    'capability_value': (400, 'Invalid value (<value>) specified for capability "<field>". Allowable values include: <list>.'),
    'capability_wildcard': (400, 'When "<field>" includes a value of "*" then no other values are allowed.'),
    'compatibility_unknown': (400, 'The compatibility value (<compat>) on Resource "<subject>" is not supported for format "<format>".'),
    'compatibility_violation': (400, 'The request would cause one or more Versions of "<subject>" to violate its compatibility rule (<compat>).'),
    'constraint_failure': (400, 'The request would result in one or more Versions of "<subject>" not being compliant with its owning Group\'s "<kind>" constraint for attribute "<path>".'),
    'data_retrieval_error': (500, 'The server was unable to retrieve all of the requested data.'),
    'defaultversionid_request': (400, 'Processing "<subject>", the "defaultversionid" attribute is not allowed to be "request" since a Version wasn\'t processed.'),
    'extra_xref_attribute': (400, 'Attribute "<name>" is not allowed to be present since the "<singular>" (<subject>) uses "xref".'),
    'format_external': (400, 'Version "<subject>" references a document stored outside of the Registry, therefore no validation was performed.'),
    'format_unknown': (400, 'Version "<subject>" has a "format" value (<format>) that it not supported.'),
    'format_violation': (400, 'The request would cause Version "<subject>" to be non-compliant with its "format" (<format>).'),
    'groups_only': (400, 'Attribute "<name>" is invalid. Only Group types are allowed to be specified on this request: <subject>.'),
    'hasdocument_violation': (400, 'The request would cause Version "<subject>" to be non-compliant. The model definition of "<plural>" has "hasdocument" set to "false" but this Version has document content.'),
    'inline_noninlineable': (400, 'Attempting to inline a non-inlineable attribute (<name>) on: <subject>.'),
    'invalid_attribute': (400, 'The attribute "<name>" for "<subject>" is not valid: <error_detail>.'),
    'malformed_id': (400, 'For "<subject>", the specified ID value (<id>) is malformed: <error_detail>.'),
    'malformed_xid': (400, 'For "<subject>", the specified XID value (<xid>) is malformed: <error_detail>.'),
    'malformed_xref': (400, 'For "<subject>", the specified xref value (<xref>) is malformed: <error_detail>.'),
    'mismatched_epoch': (400, 'The specified epoch value (<bad_epoch>) for "<subject>" does not match its current value (<epoch>).'),
    'mismatched_id': (400, 'The specified "<singular>id" value (<invalid_id>) for "<subject>" needs to be "<expected_id>".'),
    'mismatched_version_attribute': (400, 'The request would cause the "<name>" attribute across the Versions of "<subject>" to be different.'),
    'misplaced_epoch': (400, 'The specified "epoch" value for "<subject>" needs to be within a "meta" entity.'),
    'model_compliance_error': (400, 'The model provided would cause one or more entities in the Registry to become non-compliant.'),
    'model_error': (400, 'There was an error in the model definition provided: <error_detail>.'),
    'model_required_true': (400, 'Model attribute "<name>" needs to have a "required" value of "true" since a default value is provided.'),
    'model_scalar_default': (400, 'Model attribute "<name>" is not allowed to have a default value since it is not a scalar.'),
    'multiple_roots': (400, 'The operation would result in multiple root Versions for "<subject>", which is not allowed for "<plural>".'),
    'not_available': (400, 'The requested data (<subject>) is not available.'),
    'not_found': (404, 'The targeted entity (<subject>) cannot be found.'),
    'one_resource': (400, 'Only one attribute from "<list>" can be present at a time for: <subject>.'),
    'parsing_data': (400, 'There was an error parsing the data: <error_detail>.'),
    'readonly': (400, 'Updating a read-only entity (<subject>) is not allowed.'),
    'required_attribute_missing': (400, 'One or more mandatory attributes for "<subject>" are missing: <list>.'),
    'resources_only': (400, 'Attribute "<name>" is invalid. Only Resource types are allowed to be specified on this request: <subject>.'),
    'server_busy': (503, 'Due to excessive requests, the server could not complete "<subject>", please try again later.'),
    'server_error': (500, 'An unexpected error occurred, please try again later.'),
    'setdefaultversionsticky_false': (400, 'For "<subject>", setting "defaultversionsticky" to "true" is not allowed since "maxversions" is "1".'),
    'sort_noncollection': (400, "Can't sort on a non-collection result set. Query path: <subject>."),
    'too_large': (406, 'For "<subject>", the size of the response is too large to return in a single response.'),
    'too_many_versions': (400, 'For "<subject>", when the "setdefaultversionid" flag is set to "request", only one Version is allowed to be specified in the request message.'),
    'unknown_attribute': (400, 'An unknown attribute (<name>) was specified for "<subject>".'),
    'unknown_group_type': (400, 'An unknown Group type (<name>) was specified in "<subject>".'),
    'unknown_id': (400, 'While processing "<subject>", the "<singular>" with a "<singular>id" value of "<id>" cannot be found.'),
    'unknown_resource_type': (400, 'An unknown Resource type (<name>) was specified for Group type "<group>".'),
    'unsupported_specversion': (400, 'The specified "specversion" value (<specversion>) is not supported. Supported versions: <list>.'),
    'versionid_not_allowed': (400, 'While creating a new Version for "<subject>", a "versionid" was specified but the "setversionid" model aspect for entities of type "<plural>" is "false".'),
}

#: Errors of the HTTP binding (core/http.md, "Error Processing").
HTTP_ERROR_BASE = "https://github.com/xregistry/spec/blob/main/core/http.md#"
HTTP_ERRORS: dict[str, tuple[int, str]] = {
    'api_not_found': (404, 'The specified API is not supported: <subject>.'),
    'details_required': (405, '$details suffix is needed when using PATCH for the entity: <subject>.'),
    'extra_xregistry_header': (400, 'For "<subject>", xRegistry HTTP header "<name>" is not allowed on this request: <error_detail>.'),
    'header_error': (400, 'For "<subject>", there was an error processing HTTP header "<name>": <error_detail>.'),
    'missing_body': (400, "For \"<subject>\", the request is missing an HTTP body - try '{}'."),
    'missing_versions': (400, 'For "<subject>", at least one Version needs to be included in the request.'),
}

#: The gateway's own errors, for HTTP conditions the specification has no error for.
GATEWAY_ERROR_BASE = "https://xregistry.io/gateway/errors#"
GATEWAY_ERRORS: dict[str, tuple[int, str]] = {
    'events_gone': (410, 'The events after position <position> are no longer retained (events up to <horizon> were pruned): <error_detail>.'),
    'instance_mismatch': (409, 'The checkpoint (<checkpoint>) does not belong to registry "<registry>" (instance <instanceid>): <error_detail>.'),
    'header_fields_too_large': (431, 'The header fields of the request for "<subject>" exceed the limit of <limit>: <error_detail>.'),
    'payload_too_large': (413, 'The request body for "<subject>" is larger than the limit of <limit> bytes.'),
    'too_many_requests': (429, 'The caller\'s requests for "<subject>" exceed its rate limit; retry in <retry_after> s.'),
    'unresolved_reference': (404, 'The reference "<reference>" of "<subject>" in registry "<registry>" cannot be resolved: <error_detail>.'),
    'uri_too_long': (414, 'The request target "<subject>" is longer than the limit of <limit> bytes: <error_detail>.'),
    'unsupported_media_type': (415, 'For "<subject>", the request body\'s media type (<media_type>) is not supported: <error_detail>.'),
}

_ALL_ERRORS = {**SPEC_ERRORS, **HTTP_ERRORS, **GATEWAY_ERRORS}
_PLACEHOLDER = re.compile(r"<([a-z][a-z0-9_]*)>")


class GatewayError(Exception):
    """An error the gateway reports to its client (not a bug): ``code`` names it for clients
    (GraphQL's ``extensions.code``), ``status`` is its HTTP status."""

    code: str = "INTERNAL_SERVER_ERROR"
    status: int = 500


class UserInputError(GatewayError, ValueError):
    """A request argument that no xRegistry error type describes (``BAD_USER_INPUT``)."""

    code = "BAD_USER_INPUT"
    status = 400


class GraphQLRequestError(GatewayError):
    """A GraphQL-over-HTTP request refused before it runs (a persisted query that is unknown or
    not allowed, a bad request): ``code`` is its ``extensions.code``; ``status`` its HTTP status
    with ``application/graphql-response+json``, ``legacy_status`` with ``application/json``
    (legacy clients expect 200 where the request itself was well-formed)."""

    def __init__(self, code: str, message: str, status: int = 400, legacy_status: int | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.legacy_status = status if legacy_status is None else legacy_status
        self.headers = dict(headers or {})


class XRegistryError(GatewayError):
    """A spec-typed error; :attr:`code` is its ``type``.

    ``subject`` is the XID (or request path) of the entity being processed; ``path`` is the
    attribute path inside it (``envelopemetadata.type``), when one attribute is to blame;
    ``args`` fill the title template of the spec; ``detail`` is a free sentence for humans.
    """

    def __init__(
        self,
        type: str,
        subject: str = "/",
        *,
        detail: str | None = None,
        path: str | None = None,
        source: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        **args: Any,
    ) -> None:
        if type not in _ALL_ERRORS:
            raise ValueError(f"unknown xRegistry error type {type!r}")
        self.type = type
        self.code = type
        self.status = _ALL_ERRORS[type][0]
        self.subject = subject
        self.detail = detail
        self.path = path
        self.source = source
        self.args_map = {k: v for k, v in args.items() if v is not None}
        #: The individual defects behind the error (a document's violations, each breaking
        #: change), each with its ``path``: the problem's ``errors`` list.
        self.items = list(errors or [])
        super().__init__(self.title)

    @property
    def type_uri(self) -> str:
        if self.type in HTTP_ERRORS:
            return HTTP_ERROR_BASE + self.type
        if self.type in GATEWAY_ERRORS:
            return GATEWAY_ERROR_BASE + self.type
        return SPEC_ERROR_BASE + self.type

    @property
    def title(self) -> str:
        template = _ALL_ERRORS[self.type][1]

        def fill(m: re.Match[str]) -> str:
            key = m.group(1)
            if key == "subject":
                return self.subject
            if key == "path" and self.path is not None:
                return self.path
            if key in self.args_map:
                return str(self.args_map[key])
            if key == "error_detail" and self.detail:
                return self.detail.rstrip(".")
            if key == "name" and self.path:
                return self.path
            return m.group(0)

        return _PLACEHOLDER.sub(fill, template)

    def to_problem(self, instance: str | None = None) -> dict[str, Any]:
        """The RFC 9457-style body of the HTTP binding."""
        body: dict[str, Any] = {"type": self.type_uri, "title": self.title, "subject": self.subject}
        args = {k: str(v) for k, v in self.args_map.items()}
        if self.path and "name" not in args:
            args["name"] = self.path
        if args:
            body["args"] = args
        if self.detail:
            body["detail"] = self.detail
        if instance:
            body["instance"] = instance
        if self.source:
            body["source"] = self.source
        if self.items:
            body["errors"] = self.items
        return body

    def __repr__(self) -> str:
        return f"XRegistryError({self.type!r}, {self.subject!r}, {self.title!r})"


class InstanceMismatch(XRegistryError):
    """A change-feed checkpoint (``changes(since:, instanceId:)``) that does not belong to this
    registry instance: taken against another registry, or before a restore that did not keep the
    history (``instance_mismatch``, HTTP 409). ``instanceid`` is the registry's own (``none`` for a
    registry without one); ``checkpoint`` names what the client sent."""

    def __init__(self, registry: str, instance_id: str | None, checkpoint: str, detail: str) -> None:
        super().__init__("instance_mismatch", "/", detail=detail, registry=registry, instanceid=instance_id or "none",
                         checkpoint=checkpoint)


def invalid(subject: str, path: str, detail: str) -> XRegistryError:
    """``invalid_attribute`` for attribute ``path`` of entity ``subject``."""
    return XRegistryError("invalid_attribute", subject, path=path, name=path, detail=detail)


def missing(subject: str, *paths: str) -> XRegistryError:
    """``required_attribute_missing`` listing the missing attribute paths."""
    return XRegistryError(
        "required_attribute_missing", subject, path=paths[0] if paths else None, list=", ".join(paths)
    )


class ValidationErrors(XRegistryError):
    """Several violations found in one write; the first one gives type and title."""

    def __init__(self, errors: list[XRegistryError]) -> None:
        first = errors[0]
        super().__init__(first.type, first.subject, detail=first.detail, path=first.path, errors=first.items,
                         **first.args_map)
        self.errors = errors
