"""Rules of endpoint/spec.md for the attributes of endpoints (the group; the messages of an
endpoint follow ``xreg.registry.rules.messages``, with the endpoint's envelope precision)."""

from __future__ import annotations

from xreg.registry.checker import Checker
from xreg.registry.rules.core import NAME_OPT_VERSION_FORM, canonical_protocol, non_empty

_SUBSCRIBER_CONSUMER_PROTOCOLS = {"mqtt/3.1.1", "mqtt/5.0", "amqp/1.0", "nats"}
USAGE_VALUES = ("subscriber", "consumer", "producer")


def group_rules(run: Checker, attrs: dict) -> None:
    """The rules of an endpoint's attributes."""
    # endpoint/spec.md, channel: "When specified, the value MUST be a non-empty string."
    non_empty(run, attrs, ("channel",))
    # endpoint/spec.md, usage: "REQUIRED." "MUST contain only the following possible values"
    # (the model's strict enum), "MUST be an array of at least one value." "MUST declare
    # exactly one usage value, except for the single combination permitted below." "MUST NOT
    # combine producer with any other value." "MUST NOT declare all three values." "MAY
    # declare ["subscriber", "consumer"] only when the protocol is MQTT/3.1.1, MQTT/5.0,
    # AMQP/1.0, or NATS." "MUST NOT declare ["subscriber", "consumer"] for HTTP or KAFKA".
    usage = attrs.get("usage")
    if usage is None:
        run.missing("usage")
    elif isinstance(usage, list):
        values = [u for u in usage if isinstance(u, str)]
        if not usage:
            run.invalid("usage", "must contain at least one value")
        elif len(set(values)) != len(values):
            run.invalid("usage", "must not repeat a value")
        elif len(values) > 1:
            protocol = attrs.get("protocol")
            if set(values) != {"subscriber", "consumer"}:
                run.invalid("usage", 'must be one value, or exactly ["subscriber", "consumer"]')
            elif not (isinstance(protocol, str) and canonical_protocol(protocol) in _SUBSCRIBER_CONSUMER_PROTOCOLS):
                run.invalid("usage", '["subscriber", "consumer"] is only allowed with the MQTT/3.1.1, '
                                     "MQTT/5.0, AMQP/1.0 or NATS protocols")
    # endpoint/spec.md, envelopeoptions, CloudEvents/1.0: format "MUST NOT be specified when
    # mode is binary".
    options = attrs.get("envelopeoptions")
    if (isinstance(options, dict) and str(attrs.get("envelope", "")).lower() == "cloudevents/1.0"
            and options.get("mode") == "binary" and options.get("format") is not None):
        run.invalid("envelopeoptions.format", 'must not be specified when mode is "binary"')
    envelope, protocol = attrs.get("envelope"), attrs.get("protocol")
    # endpoint/spec.md, envelope: "MUST be a non-empty case-insensitive string of the form
    # <SPEC>[/<VERSION>]"; protocol: "MUST be a non-empty case-insensitive string."
    if isinstance(envelope, str) and not NAME_OPT_VERSION_FORM.fullmatch(envelope):
        run.invalid("envelope", "must have the form <SPEC>[/<VERSION>]")
    if protocol == "":
        run.invalid("protocol", "must not be empty")
