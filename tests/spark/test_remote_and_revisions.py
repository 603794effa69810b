"""Per-entity revisions in the data source, and remote registries read at a snapshot through the
gateway (a remote gateway of our own on 127.0.0.1, federated by a second gateway)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gateway.app import create_app
from tests.federation.servers import GatewayServer
from tests.spark.conftest import serve
from xreg.config import Settings

REMOTE_DOCUMENTS = ["contoso-erp-jsons07.xreg.json", "mqtt-sparkplugB.xreg.json"]


def test_each_row_carries_the_revision_that_wrote_it(read, gateway):
    group, message = "IO.AISstream", "IO.AISstream.PositionReport"
    before = gateway.revision()
    written = gateway.graphql(
        'mutation($a: JSON!) { updateResource(groupType: "messagegroups", groupId: "IO.AISstream", '
        'resourceType: "messages", resourceId: "IO.AISstream.PositionReport", attributes: $a) { revision } }',
        a={"description": "revised"})["updateResource"]["revision"]
    assert written > before
    rows = {r.id: r.revision for r in read("messages").filter(f"group = '{group}'").select("id", "revision").collect()}
    assert rows[message] == written
    others = [rev for mid, rev in rows.items() if mid != message]
    assert others and all(rev is not None and rev < written for rev in others)


@pytest.fixture(scope="module")
def federating(tmp_path_factory) -> Iterator[tuple[str, GatewayServer]]:
    """A remote gateway process, and a gateway on 127.0.0.1 federating it as ``erp`` (without
    following its event log: the test counts the requests a snapshot makes)."""
    remote = GatewayServer("erp", REMOTE_DOCUMENTS, tmp_path_factory.mktemp("remote")).start()
    try:
        settings = Settings(data_dir=tmp_path_factory.mktemp("federating"), registry_id="own", config_watch_seconds=0,
                            registries=[{"id": "erp", "kind": "xregistry", "url": remote.base_url,
                                         "follow_events": False}])
        with serve(create_app(settings)) as base:
            yield f"{base}/graphql", remote
    finally:
        remote.stop()


def _remote_totals(remote: GatewayServer) -> dict[str, int]:
    query = "{ registry { endpoints { totalCount } messagegroups { totalCount } messages { totalCount } } }"
    data = httpx.post(remote.origin + "/graphql", json={"query": query}, timeout=30, trust_env=False).json()["data"]
    return {k: v["totalCount"] for k, v in data["registry"].items()}


def test_a_remote_registry_is_read_at_a_snapshot(spark_session: Any, federating):
    url, remote = federating
    expected = _remote_totals(remote)
    assert expected["messages"] > 0
    for entity in ("endpoints", "messagegroups", "messages"):
        remote.wrapper.clear()
        df = (spark_session.read.format("xregistry").option("url", url).option("entity", entity)
              .option("registry", "erp").option("numPartitions", "3").option("pageSize", "5").load())
        rows = df.select("registry", "xid", "revision").collect()
        assert len(rows) == expected[entity] == len({r.xid for r in rows}), entity
        assert {r.registry for r in rows} <= {"erp"} and len({r.revision for r in rows}) <= 1
        # one snapshot: each request the remote saw was made once, whatever the partitions and pages
        log = remote.wrapper.log
        assert log and len(log) == len(set(log)), log
