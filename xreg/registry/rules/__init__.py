"""Attribute rules per domain, one module each: what a spec demands of attributes beyond their
model definitions (types, ``enum``, ``required``: ``xreg.registry.checker``).

``core`` (core/spec.md, every entity), ``messages`` (message/spec.md: message groups and
messages, in a message group or an endpoint), ``endpoints`` (endpoint/spec.md: endpoints),
``schemas`` (schema/spec.md: schema versions). ``xreg.registry.validation`` runs them per entity;
a new rule of a domain is one more check in its module's ``*_rules`` function, reported on the
:class:`~xreg.registry.checker.Checker` (``invalid`` / ``missing``).
"""
