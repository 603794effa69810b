"""The steps of a write, each in its module; :class:`~xreg.registry.changeset.Changeset` is their façade.

``unit`` (the states a changeset loaded and changed), ``attributes`` (request attributes: merge,
server-owned, read-only), ``ids``, ``registry_entity``, ``groups``, ``group_constraints``,
``resources`` (the resource processing algorithm, versions, ``meta``), ``documents``, ``settle``
(default version, ``maxversions``, ``xref``, the resource row), ``ancestors``, ``deletes``,
``checks`` (validation of what was written).
"""
