"""The served process's garbage-collector settings: after start-up the gateway freezes what is
loaded (``XREG_GC_FREEZE``) and sets the gen-0 threshold (``XREG_GC_GEN0_THRESHOLD``, 5000 unless set)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from gateway.app import create_app
from tests.http.support import make_settings
from tests.support.live import LiveServer


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector starts unfrozen at CPython's thresholds; whatever a test did is undone."""
    threshold = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def served_collector(tmp_path: Path, **settings: object) -> tuple[tuple[int, int, int], int]:
    """The collector's thresholds and frozen-object count while a gateway with ``settings`` serves."""
    with LiveServer(create_app(make_settings(tmp_path, **settings))) as live:
        assert httpx.get(f"{live.url}/healthz", trust_env=False).status_code == 200
        return gc.get_threshold(), gc.get_freeze_count()


def test_start_up_freezes_what_is_loaded_and_raises_the_gen0_threshold(tmp_path: Path, collector: None) -> None:
    threshold, frozen = served_collector(tmp_path)
    assert threshold == (5000, 10, 10)  # the older generations keep CPython's
    assert frozen > 10_000  # modules, the schema, the model: never walked by a collection again


def test_the_gen0_threshold_is_set_when_configured(tmp_path: Path, collector: None) -> None:
    threshold, frozen = served_collector(tmp_path, gc_gen0_threshold=4321)
    assert threshold == (4321, 10, 10)
    assert frozen > 10_000


def test_freezing_can_be_turned_off_and_cpythons_threshold_kept(tmp_path: Path, collector: None) -> None:
    assert served_collector(tmp_path, gc_freeze=False, gc_gen0_threshold=700) == ((700, 10, 10), 0)


def test_a_threshold_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="gc_gen0_threshold"):
        make_settings(tmp_path, gc_gen0_threshold=0)
