"""Registry events (core/events.md): what the write path derives from each commit
(:mod:`xreg.events.derive`) and the store keeps with it (:mod:`xreg.events.record`).

Consumers — ``GET /events``, GraphQL subscriptions, webhooks — read them through the store
(``Store.events_after``) or the sources layer's ``adapters.events.EventFeed``.
"""

from xreg.events.record import (
    ACTIONS,
    ENTITIES,
    EventDraft,
    EventPosition,
    RegistryEvent,
    event_type,
    matches,
    subject_filter,
)

__all__ = ["ACTIONS", "ENTITIES", "EventDraft", "EventPosition", "RegistryEvent", "event_type", "matches",
           "subject_filter"]
