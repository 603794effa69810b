"""Checkpoints that cannot lie: the connector records each registry's instance id with its
revision and refuses to continue from a checkpoint of another instance.

The gateway reports ``Registry.instanceId`` and refuses ``changes(since:, instanceId:)`` of
another instance with ``instance_mismatch``. A small real HTTP server speaking exactly that part
of the GraphQL API stands in for a gateway that has them (deterministic instance ids); the live
gateway is used for the rest, whether or not it reports instance ids."""

from __future__ import annotations

import json
import logging

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from pyspark_xregistry.client import CheckpointMismatch, ClientConfig, GatewayClient
from pyspark_xregistry.schemas import schema_for
from pyspark_xregistry.snapshot import main, run
from pyspark_xregistry.source import ChangesPartition, ReadOptions, XRegistryReader
from tests.spark.conftest import REGISTRY_ID, serve

INSTANCE = "5f0c2f4e-4d7e-4a59-9d0e-0a1b2c3d4e5f"


@pytest.fixture
def instance_gateway():
    """``main`` at revision 12 of instance :data:`INSTANCE`, with an empty change feed."""
    seen: list[dict] = []

    async def graphql(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append(body)
        query, variables = body["query"], body.get("variables") or {}
        if "registries" in query:
            return JSONResponse({"data": {"registries": [
                {"registryid": "main", "revision": 12, "instanceId": INSTANCE}]}})
        if "changes(" in query:
            given = variables.get("i")
            if given is not None and given != INSTANCE:
                return JSONResponse({"data": {"registry": None}, "errors": [{
                    "message": f"the checkpoint is of instance {given}, this registry is {INSTANCE}",
                    "path": ["registry", "changes"], "extensions": {"code": "instance_mismatch"}}]})
            return JSONResponse({"data": {"registry": {"changes": {
                "nodes": [], "pageInfo": {"hasNextPage": False, "endCursor": None}}}}})
        return JSONResponse({"errors": [{"message": "not served here"}]}, 400)

    with serve(Starlette(routes=[Route("/graphql", graphql, methods=["POST"])])) as base:
        yield f"{base}/graphql", seen


def _reader(url: str, **options: str) -> XRegistryReader:
    opts = ReadOptions.parse({"url": url, "entity": "messages", **options})
    return XRegistryReader(opts, schema_for("messages", changes="sinceRevision" in options))


def test_the_instance_is_read_and_passed_on_with_the_change_feed(instance_gateway):
    url, seen = instance_gateway
    with GatewayClient(ClientConfig(url=url)) as client:
        states = client.registry_states()
        assert (states["main"].revision, states["main"].instance) == (12, INSTANCE)
        assert list(client.changes("main", 12, 10, ["messagegroups/messages"], INSTANCE)) == [[]]
        assert seen[-1]["variables"]["i"] == INSTANCE and "instanceId: $i" in seen[-1]["query"]
        with pytest.raises(CheckpointMismatch, match="instance_mismatch"):
            list(client.changes("main", 12, 10, ["messagegroups/messages"], "another-instance"))


def test_the_source_refuses_a_checkpoint_of_another_instance(instance_gateway):
    url, seen = instance_gateway
    with pytest.raises(CheckpointMismatch, match="instance another-instance.*now serves instance " + INSTANCE):
        _reader(url, sinceRevision="10", instanceId="another-instance").partitions()
    with pytest.raises(CheckpointMismatch):  # pinned reads of another instance's revision too
        _reader(url, asOfRevision="10", instanceId="main=another-instance").partitions()
    assert not any("changes(" in body["query"] for body in seen)  # refused before reading anything

    (partition,) = _reader(url, sinceRevision="10", instanceId=f"main={INSTANCE}").partitions()
    assert isinstance(partition, ChangesPartition) and partition.instance == INSTANCE
    # without a recorded instance the feed is still bound to the instance seen when planning
    (partition,) = _reader(url, sinceRevision="10").partitions()
    assert partition.instance == INSTANCE
    with pytest.raises(ValueError, match="instanceId"):
        ReadOptions.parse({"url": url, "entity": "messages", "instanceId": "main=,x"})


def test_the_snapshot_job_records_instances_and_refuses_another_ones_checkpoint(
        spark_session, gateway, tmp_path, capsys, caplog):
    with GatewayClient(ClientConfig(url=gateway.url, token=gateway.token)) as client:
        state = client.registry_states()[REGISTRY_ID]
    manifest = run(spark_session, gateway.url, tmp_path, token=gateway.token, entities=["schemagroups"])
    assert manifest["instances"] == {REGISTRY_ID: state.instance}
    assert manifest["entities"]["schemagroups"]["instances"] == {REGISTRY_ID: state.instance}

    # the checkpoint now says it was taken from another instance of the registry
    recorded = json.loads((tmp_path / "manifest.json").read_text())
    recorded["instances"] = {REGISTRY_ID: "another-instance"}
    (tmp_path / "manifest.json").write_text(json.dumps(recorded))
    args = ["--url", gateway.url, "--out", str(tmp_path), "--token", gateway.token, "--entity", "schemagroups",
            "--since", str(manifest["revisions"][REGISTRY_ID])]
    if state.instance is not None:
        assert main(args) == 2
        assert "refused" in capsys.readouterr().err and not (tmp_path / "changes").exists()
    else:  # a gateway without instance ids: the check cannot be made, and the job says so
        with caplog.at_level(logging.WARNING, logger="pyspark_xregistry"):
            assert main(args) == 0
        assert "cannot be checked" in caplog.text
