"""Caches keyed by stored data stay bounded: the id attribute a resource's stored ``meta`` names
picks the attributes its view owns, and a writer may store as many distinct names as it likes."""

from __future__ import annotations

from adapters.local import RESOURCE_OWN_CACHED, _resource_own


def test_the_view_attributes_by_id_attribute_are_a_bounded_cache() -> None:
    _resource_own.cache_clear()
    for i in range(RESOURCE_OWN_CACHED * 4):
        own = _resource_own(f"thing{i}id")
        assert {f"thing{i}id", f"thing{i}uri", f"thing{i}url", "versionid"} <= own
    assert _resource_own.cache_info().currsize == RESOURCE_OWN_CACHED
