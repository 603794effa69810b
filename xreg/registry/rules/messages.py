"""Rules of message/spec.md for the attributes of message groups and messages (in a message
group, or in an endpoint: there with endpoint/spec.md's envelope precision)."""

from __future__ import annotations

from xreg.registry.checker import Checker
from xreg.registry.rules.core import NAME_OPT_VERSION_FORM, NAME_VERSION_FORM, canonical_protocol


def group_rules(run: Checker, attrs: dict) -> None:
    """The rules of a message group's attributes."""
    _check_envelope_protocol_form(run, attrs)


def value_rules(run: Checker, attrs: dict) -> None:
    """The rules of single message attribute values (a request's attributes that are not applied,
    see :func:`~xreg.registry.validation.validate_values`)."""
    _check_envelope_protocol_form(run, attrs)
    _check_dataschemaformat_form(run, attrs)


def version_rules(run: Checker, attrs: dict, group_attrs: dict, *, endpoint: bool) -> None:
    """The rules of a message (version), against its group's attributes."""
    _check_envelope_protocol_form(run, attrs)
    envelope, protocol = attrs.get("envelope"), attrs.get("protocol")
    # A message with a base (basemessageuri) is completed by it (message/spec.md: the base's
    # definitions are copied into it): what must come in pairs may come half from the base.
    based = bool(attrs.get("basemessageuri"))
    # message/spec.md, envelopemetadata: "REQUIRED if envelope is specified." Its content "is
    # defined by the message envelope", so without an envelope it has no meaning.
    if envelope is not None and attrs.get("envelopemetadata") is None and not based:
        run.missing("envelopemetadata")
    if envelope is None and attrs.get("envelopemetadata") is not None and not based:
        run.invalid("envelopemetadata", "is only allowed together with an envelope")
    # message/spec.md, protocoloptions: "REQUIRED if protocol is specified."
    if protocol is not None and attrs.get("protocoloptions") is None and not based:
        run.missing("protocoloptions")
    # message/spec.md, dataschema / dataschemauri: "Mutually exclusive with the dataschemauri
    # attribute." "If present, dataschemaformat MUST be present."
    if attrs.get("dataschema") is not None and attrs.get("dataschemauri") is not None:
        run.invalid("dataschemauri", "dataschema and dataschemauri are mutually exclusive")
    if (attrs.get("dataschema") is not None or attrs.get("dataschemauri") is not None) and attrs.get(
        "dataschemaformat"
    ) is None and not based:
        run.missing("dataschemaformat")
    _check_dataschemaformat_form(run, attrs)
    # message/spec.md, dataschemaxid: "If dataschemauri is also present then its value MUST be
    # the self URL of the entity referenced by this attribute."
    xid, uri = attrs.get("dataschemaxid"), attrs.get("dataschemauri")
    if isinstance(xid, str) and isinstance(uri, str):
        target = uri.split("#", 1)[0].removesuffix("$details")
        if not target.endswith(xid.rstrip("/")):
            run.invalid("dataschemauri", f"must be the self URL of dataschemaxid ({xid})")
    options = attrs.get("protocoloptions")
    if isinstance(protocol, str) and isinstance(options, dict):
        name = canonical_protocol(protocol)
        # message/spec.md, "KAFKA" protocol: "The key and key_base64 properties are mutually
        # exclusive and MUST NOT be present at the same time."
        if name == "kafka" and options.get("key") is not None and options.get("key_base64") is not None:
            run.invalid("protocoloptions.key_base64", "key and key_base64 are mutually exclusive")
        # message/spec.md, HTTP protocols: "The status and method properties are mutually
        # exclusive and MUST NOT be present at the same time."
        if name == "http" and options.get("method") is not None and options.get("status") is not None:
            run.invalid("protocoloptions.status", "status and method are mutually exclusive")
    _check_group_consistency(run, attrs, group_attrs, endpoint=endpoint, based=based)


def _check_envelope_protocol_form(run: Checker, attrs: dict) -> None:
    # message/spec.md, envelope (Message Group): "If present, MUST be a non-empty
    # case-insensitive string." "If present, MUST follow the naming convention
    # <NAME>/<VERSION>".
    envelope, protocol = attrs.get("envelope"), attrs.get("protocol")
    if isinstance(envelope, str) and not NAME_VERSION_FORM.fullmatch(envelope):
        run.invalid("envelope", "must have the form <NAME>/<VERSION>, e.g. CloudEvents/1.0")
    # message/spec.md, protocol (Message Group): "If present, MUST be a non-empty
    # case-insensitive string." "If present, MUST follow the naming convention <NAME> or
    # <NAME>/<VERSION>".
    if isinstance(protocol, str) and not NAME_OPT_VERSION_FORM.fullmatch(protocol):
        run.invalid("protocol", "must have the form <NAME> or <NAME>/<VERSION>, e.g. MQTT/5.0 or KAFKA")


def _check_dataschemaformat_form(run: Checker, attrs: dict) -> None:
    # message/spec.md, dataschemaformat: "If present, MUST be a non-empty case-insensitive
    # string." "MUST follow the naming convention <NAME>/<VERSION>".
    fmt = attrs.get("dataschemaformat")
    if isinstance(fmt, str) and not NAME_VERSION_FORM.fullmatch(fmt):
        run.invalid("dataschemaformat", "must have the form <NAME>/<VERSION>, e.g. JsonSchema/draft-07")


def _check_group_consistency(run: Checker, attrs: dict, group: dict, *, endpoint: bool, based: bool) -> None:
    genv, gprot = group.get("envelope"), group.get("protocol")
    env, prot = attrs.get("envelope"), attrs.get("protocol")
    if isinstance(genv, str):
        if env is None and not based:
            run.missing("envelope")
        elif isinstance(env, str) and not _envelope_within(genv, env, endpoint=endpoint):
            run.invalid("envelope", f'must match the envelope of its group ("{genv}")')
    if isinstance(gprot, str):
        if prot is None and not based:
            run.missing("protocol")
        elif isinstance(prot, str) and canonical_protocol(prot) != canonical_protocol(gprot):
            run.invalid("protocol", f'must be the protocol of its group ("{gprot}")')


def _envelope_within(group_env: str, env: str, *, endpoint: bool) -> bool:
    # message/spec.md, envelope (message): "MUST be the same as the envelope attribute of the
    # messagegroup object into which the message is embedded or referenced."
    if not endpoint:
        return group_env.lower() == env.lower()
    # endpoint/spec.md, envelope: "If a <VERSION> is specified at the Group level, all
    # Resources within that Group MUST have a <VERSION> value that is at least as precise as
    # its Group, and MUST NOT expand it." No group version: any version of that name.
    gname, _, gver = group_env.lower().partition("/")
    name, _, ver = env.lower().partition("/")
    return name == gname and (not gver or ver == gver or ver.startswith(gver + "."))
