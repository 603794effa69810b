"""Shared fixtures: a fresh local registry. The real documents are in ``tests/corpus.py``.

How the suite runs (``make test``): on two pytest-xdist workers (``-n 2 --dist loadgroup``), in a
random order (pytest-randomly: ``-p no:randomly`` turns it off, ``--randomly-seed=N``
replays an order; the seed is printed at the end). So every test:

- takes its ports from the OS (``tests.support.live.bound_socket``, ``LiveServer``) and its files
  from ``tmp_path`` / ``tmp_path_factory`` — nothing written under the repository;
- leaves no state behind in modules or process-wide registries (metrics: compare before/after);
- waits on events, the injected clock (``tests/support/clock.py``) or counted loop turns — never on
  a sleep or an elapsed time; a poll for a real server's readiness has a generous bound and stops
  on its condition.

Tests that must share one worker say so with ``@pytest.mark.xdist_group("name")`` and a one-line
reason; :data:`GROUPS` marks whole directories (the Spark tests share one SparkSession, which is
too heavy to start on both workers).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from tests.federation.servers import redis_or_skip
from xreg.registry.service import LocalRegistry
from xreg.storage.sqlite import SQLiteStore

# Hypothesis's per-example deadline (200 ms by default) is a wall-clock bound: on a busy machine
# it fails a correct test. No example here is bounded by time; the fuzz tests bound work instead.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

#: Directories whose tests run on one xdist worker, with the reason.
GROUPS = {
    "spark": "a local[2] SparkSession (a JVM of about 600 MB) and a corpus-loaded gateway per worker would double both",
}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        area = item.path.relative_to(Path(__file__).parent).parts[0]
        if area in GROUPS:
            item.add_marker(pytest.mark.xdist_group(area))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int):  # the order of this run, to replay it
        terminalreporter.write_line(f"random order: --randomly-seed={seed}")


@pytest.fixture
async def registry(tmp_path: Path):
    """An opened local registry on a fresh SQLite file."""
    reg = LocalRegistry(SQLiteStore(tmp_path / "registry.db"), registry_id="test", base_url="http://gw/registry")
    await reg.open()
    try:
        yield reg
    finally:
        await reg.close()


@pytest.fixture(scope="module")
def redis():
    """A real redis-server on a free loopback port for the module's tests (skipped outside CI when
    the Debian package is missing)."""
    server = redis_or_skip()
    try:
        yield server
    finally:
        server.stop()
