"""Cross-reference Resources read as their target (core/spec.md "Cross Referencing
Resources") over HTTP, on each embedded store (GraphQL: tests/graphql/test_graphql_xrefs.py)."""

from __future__ import annotations

from tests.http.support import assert_problem
from tests.http.test_http_model_features import constrained, dirs_model, install

SOURCE = "/registry/dirs/d2/files/x"


async def setup(client) -> None:
    await install(client, dirs_model())
    r = await client.put("/registry/dirs/d1/files/f1", json={"tier": "gold", "versions": {"1": {}, "2": {"tier": "x"}}})
    assert r.status_code == 201, r.text
    r = await client.put(SOURCE, json={"meta": {"xref": "/dirs/d1/files/f1"}})
    assert r.status_code == 201, r.text


async def test_source_serves_the_targets_attributes(store_client):
    """"When this source Resource (mySchema) is retrieved, all of the target Resource's
    attributes (except its <RESOURCE>id) will appear as if they were locally defined"; "Any
    attributes referencing the source MUST use the source's metadata"; "The xref attribute MUST
    always appear when the source's meta sub-object is serialized"."""
    await setup(store_client)
    target = (await store_client.get("/registry/dirs/d1/files/f1")).json()
    source = (await store_client.get(SOURCE + "?inline=meta")).json()
    assert source["fileid"] == "x" and source["xid"] == "/dirs/d2/files/x"
    assert source["self"].endswith("/dirs/d2/files/x") and source["metaurl"].endswith("/dirs/d2/files/x/meta")
    for name in ("versionid", "tier", "epoch", "ancestorid", "isdefault", "createdat", "modifiedat", "versionscount"):
        assert source[name] == target[name], name
    meta = source["meta"]
    assert meta["xref"] == "/dirs/d1/files/f1" and meta["fileid"] == "x" and meta["xid"] == "/dirs/d2/files/x/meta"
    assert meta["defaultversionid"] == target["versionid"]
    assert meta["defaultversionurl"].endswith("/dirs/d2/files/x/versions/" + target["versionid"])
    assert (await store_client.get(SOURCE + "/meta")).json() == meta
    listed = (await store_client.get("/registry/dirs/d2/files")).json()["x"]
    assert listed["tier"] == target["tier"] and listed["fileid"] == "x"
    # the document view: "the meta entity's attributes epoch through defaultversionsticky MUST be
    # excluded if xref is set"
    doc = (await store_client.get(SOURCE + "/meta?doc")).json()
    assert set(doc) == {"fileid", "self", "xid", "xref"}


async def test_source_follows_changes_of_the_target(store_client):
    """The source is a reference, not a copy: a change of the target shows through it."""
    await setup(store_client)
    await store_client.patch("/registry/dirs/d1/files/f1", json={"tier": "silver"})
    assert (await store_client.get(SOURCE)).json()["tier"] == "silver"


async def test_dangling_and_transitive_xrefs_show_ids_only(store_client):
    """"In these "dangling xref" situations, the serialization of the source Resource will not
    include any target Resource attributes"; "If the target Resource itself is a
    cross-reference Resource, then including the target Resource's attributes MUST NOT be done"."""
    await setup(store_client)
    r = await store_client.put("/registry/dirs/d3/files/y", json={"meta": {"xref": "/dirs/d2/files/x"}})
    assert r.status_code == 201, r.text
    y = (await store_client.get("/registry/dirs/d3/files/y")).json()
    assert "tier" not in y and "versionid" not in y and y["versionscount"] == 0
    await store_client.delete("/registry/dirs/d1/files/f1")
    x = (await store_client.get(SOURCE + "?inline=meta")).json()
    assert "tier" not in x and x["meta"]["xref"] == "/dirs/d1/files/f1"


async def test_writes_alongside_xref_are_refused(store_client):
    """"The request MUST NOT include nested collections or any other attributes [...] Presence
    of these extra attributes MUST generate an error (extra_xref_attribute)"."""
    await setup(store_client)
    r = await store_client.put(SOURCE, json={"tier": "gold", "meta": {"xref": "/dirs/d1/files/f1"}})
    assert_problem(r, 400, "extra_xref_attribute")
    r = await store_client.put(SOURCE, json={"versions": {"1": {}}, "meta": {"xref": "/dirs/d1/files/f1"}})
    assert_problem(r, 400, "extra_xref_attribute")


async def test_source_versions_are_the_targets(store_client):
    """The source "appears to be a normal Resource that exists within" its Group: its ``versions``
    are the target's, under the source's XIDs ("Any attributes referencing the source MUST use
    the source's metadata"), paged like any collection; in document view they do not exist
    (``cannot_doc_xref``)."""
    await setup(store_client)
    target = (await store_client.get("/registry/dirs/d1/files/f1/versions")).json()
    versions = (await store_client.get(SOURCE + "/versions")).json()
    assert sorted(versions) == sorted(target) == ["1", "2"]
    for vid, view in versions.items():
        assert view["xid"] == f"/dirs/d2/files/x/versions/{vid}" and view["fileid"] == "x"
        assert view["self"].endswith(f"/dirs/d2/files/x/versions/{vid}")
        assert view["isdefault"] == target[vid]["isdefault"] and view.get("tier") == target[vid].get("tier")
    one = await store_client.get(SOURCE + "/versions/2")
    assert one.status_code == 200 and one.json()["xid"] == "/dirs/d2/files/x/versions/2", one.text
    assert (await store_client.get(SOURCE + "/versions/9")).status_code == 404
    first = await store_client.get(SOURCE + "/versions?limit=1")
    assert list(first.json()) == ["1"]
    assert list((await store_client.get(first.links["next"]["url"])).json()) == ["2"]
    inline = (await store_client.get(SOURCE + "?inline=versions")).json()
    assert inline["versionscount"] == 2
    assert_problem(await store_client.get(SOURCE + "/versions?doc"), 400, "cannot_doc_xref")


async def test_filters_and_sort_read_the_values_the_source_is_served_with(store_client):
    """"From a consumption (read) perspective, aside from the presence of the xref attribute, the
    Resource appears to be a normal Resource [...] All of the specification-defined features
    (e.g. inline, filter request flags) MAY be used when retrieving the Resource": ``?filter``
    matches the source by its target's attributes (and its own ids), ``?sort`` places it by them."""
    await setup(store_client)
    r = await store_client.put("/registry/dirs/d2/files/a", json={"tier": "zinc"})
    assert r.status_code == 201, r.text
    target = (await store_client.get("/registry/dirs/d1/files/f1")).json()
    assert target["tier"] == "x"  # its default Version's
    found = (await store_client.get("/registry/dirs/d2/files?filter=tier=x")).json()
    assert list(found) == ["x"] and found["x"]["tier"] == "x"
    assert list((await store_client.get("/registry/dirs/d2/files?filter=fileid=x")).json()) == ["x"]
    assert (await store_client.get("/registry/dirs/d2/files?filter=tier=null")).json() == {}
    assert list((await store_client.get("/registry/dirs/d2/files?sort=tier")).json()) == ["x", "a"]
    assert list((await store_client.get("/registry/dirs/d2/files?sort=tier=desc")).json()) == ["a", "x"]
    first = await store_client.get("/registry/dirs/d2/files?sort=tier&limit=1")
    assert list(first.json()) == ["x"]
    assert list((await store_client.get(first.links["next"]["url"])).json()) == ["a"]


async def test_group_constraints_apply_to_xrefd_resources(store_client):
    """core/model.md: "The enum and equals constraints, if specified, MUST be adhered to by the
    Resource. Note that this includes changes to the Resource in its original location that
    would then violate any of the Groups' constraints that xref that Resource." — on creating
    the reference and on later writes of the target."""
    await install(store_client, constrained({"files.tier": {"enum": ["gold", "x"]}}))
    r = await store_client.put("/registry/dirs/d1/files/f1", json={"tier": "x"})
    assert r.status_code == 201, r.text
    # the source's Group narrows the rule for its own Resources (core/spec.md "constraints Attribute")
    r = await store_client.put("/registry/dirs/d2", json={"constraints": {"files.tier": {"enum": ["x"]}}})
    assert r.status_code == 201, r.text
    r = await store_client.put(SOURCE, json={"meta": {"xref": "/dirs/d1/files/f1"}})
    assert r.status_code == 201, r.text
    body = assert_problem(await store_client.patch("/registry/dirs/d1/files/f1", json={"tier": "gold"}), 400,
                          "constraint_failure")
    assert body["subject"].startswith("/dirs/d1/files/f1")
    assert (await store_client.get("/registry/dirs/d1/files/f1")).json()["tier"] == "x"
    assert (await store_client.patch("/registry/dirs/d1/files/f9", json={"tier": "gold"})).status_code == 201
    # a new reference to a Resource outside the referencing Group's rules is refused
    r = await store_client.put("/registry/dirs/d1/files/f2", json={"tier": "gold"})
    assert r.status_code == 201, r.text
    assert_problem(await store_client.put("/registry/dirs/d2/files/y", json={"meta": {"xref": "/dirs/d1/files/f2"}}),
                   400, "constraint_failure")
    assert (await store_client.get("/registry/dirs/d2/files/y")).status_code == 404
    # outside Groups with narrower rules the same reference is fine; narrowing that Group's rules
    # afterwards is checked against the Versions its references show
    assert (await store_client.put("/registry/dirs/d3/files/y", json={"meta": {"xref": "/dirs/d1/files/f2"}})
            ).status_code == 201
    assert_problem(await store_client.put("/registry/dirs/d3", json={"constraints": {"files.tier": {"enum": ["x"]}}}),
                   400, "constraint_failure")
