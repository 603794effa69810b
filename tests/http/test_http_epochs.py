"""Every ``epoch`` rule of core/spec.md and core/http.md, one test each, over HTTP on each
embedded store (``grep -n epoch spec.md http.md``):

====  =====================================================================  ==============================
Rule  Sentence (abridged)                                                     Test
====  =====================================================================  ==============================
E1    spec.md epoch: "Each time the associated entity is updated, this       test_update_moves_own_epoch
      value MUST be set to a new value that is greater than the current one"
E2    spec.md epoch: "MUST be updated for every update operation, even if    test_update_without_change_is_a_touch
      no attributes were explicitly updated [...] a touch"; http.md: "the
      epoch and modifiedat attributes are designed to always be updated on
      each write operation to that entity"
E3    spec.md epoch: "During a create operation, if this attribute is        test_epoch_on_create_is_ignored
      present in the request, then it MUST be silently ignored"
E4    spec.md epoch: "During an update, or delete, operation [...]           test_mismatched_epoch_on_update_and_delete
      mismatched_epoch MUST be generated if the request includes a non-null
      value that differs from the existing value"; spec.md Epoch Flag (delete)
E5    spec.md epoch: "A value of null MUST be treated the same as a request  test_null_epoch_is_no_check
      with no epoch attribute at all"
E6    spec.md epoch: "If an entity has a nested xRegistry collection, its    test_parents_move_when_children_come_and_go
      epoch value MUST be updated each time an entity in that collection is
      added or removed"
E7    spec.md epoch: "its epoch value MUST NOT be updated solely due to      test_parents_stay_when_children_change
      modifications of an existing entity in the collection"
E8    spec.md epoch / Meta: a Resource's epoch "is only incremented when the  test_meta_epoch_moves_on_meta_and_version_set
      meta attributes are updated, or when a Version is added, or removed"
E9    spec.md Registry entity: when model or capabilities "are modified the   test_registry_epoch_moves_with_its_model
      Registry entity is considered to be updated, and therefore its epoch
      [...] MUST be updated"
E10   spec.md defaultversionid: "those changes alone MUST NOT change any      test_default_version_change_moves_meta_only
      attributes in any Version [...] However, the Resource's meta
      sub-object's modifiedat and epoch attributes MUST be updated"
E11   spec.md ancestorid: "Any modification to the ancestorid attribute MUST  test_indirect_ancestor_change_moves_version
      result in the owning Version's epoch and modifiedat attributes be
      updated [...] indirectly changed due to changes to other Versions"
E12   spec.md Version: epoch "MUST be the epoch value of this Version, not    test_resource_shows_default_version_epoch
      the owning Resource"; the Resource's top-level epoch is its default
      Version's (serialization "Start of default Ver attrs"), http.md PUT
      $details example: epoch 1 in, epoch 2 out
E13   spec.md xref: "epoch = max(original_Epoch, target_Resource_Epoch) + 1"  test_xref_back_to_normal_epoch
E14   spec.md xref: "The request MAY include epoch within meta (to do an      test_xref_request_checks_meta_epoch
      epoch validation check)"
E15   spec.md deletes: "If an epoch value only appears at the top-level (and  test_misplaced_epoch
      not within meta) then an error (misplaced_epoch) MUST be generated"
====  =====================================================================  ==============================
"""

from __future__ import annotations

from typing import Any

from tests.http.support import assert_problem
from tests.http.test_http_model_features import dirs_model, install

F1 = "/registry/dirs/d1/files/f1"


async def epoch(client, path: str) -> Any:
    r = await client.get(path)
    assert r.status_code == 200, r.text
    return r.json()["epoch"]


async def setup(client) -> None:
    await install(client, dirs_model())
    assert (await client.put(F1, json={"tier": "a"})).status_code == 201


async def test_update_moves_own_epoch(store_client):
    """E1."""
    await setup(store_client)
    r = await store_client.put("/registry/dirs/d1", json={"region": "eu"})
    assert r.json()["epoch"] == 2
    r = await store_client.put(F1 + "/versions/1", json={"tier": "b"})
    assert r.json()["epoch"] == 2


async def test_update_without_change_is_a_touch(store_client):
    """E2: PATCH with nothing, and the same PUT twice, on a group, a version and a meta."""
    await setup(store_client)
    registry = await epoch(store_client, "/registry")
    assert (await store_client.patch("/registry/dirs/d1", json={})).json()["epoch"] == 2
    assert (await store_client.patch(F1, json={})).json()["epoch"] == 2
    assert (await store_client.put(F1, json={"tier": "a"})).json()["epoch"] == 3
    assert (await store_client.patch(F1 + "/meta", json={})).json()["epoch"] == 2
    assert (await store_client.patch("/registry", json={})).json()["epoch"] == registry + 1


async def test_epoch_on_create_is_ignored(store_client):
    """E3."""
    await install(store_client, dirs_model())
    assert (await store_client.put("/registry/dirs/d9", json={"epoch": 9})).json()["epoch"] == 1
    r = await store_client.put("/registry/dirs/d9/files/f", json={"epoch": 9, "meta": {"epoch": 9}})
    assert r.status_code == 201 and r.json()["epoch"] == 1, r.text
    assert await epoch(store_client, "/registry/dirs/d9/files/f/meta") == 1


async def test_mismatched_epoch_on_update_and_delete(store_client):
    """E4: body epochs of a group, a version, a meta; the ``epoch`` flag of deletes."""
    await setup(store_client)
    assert_problem(await store_client.put("/registry/dirs/d1", json={"epoch": 5}), 400, "mismatched_epoch")
    assert_problem(await store_client.put(F1, json={"epoch": 5}), 400, "mismatched_epoch")
    assert_problem(await store_client.put(F1 + "/meta", json={"epoch": 5}), 400, "mismatched_epoch")
    assert_problem(await store_client.delete(F1 + "?epoch=5"), 400, "mismatched_epoch")
    assert_problem(await store_client.delete("/registry/dirs/d1?epoch=5"), 400, "mismatched_epoch")
    assert await epoch(store_client, F1) == 1 and await epoch(store_client, "/registry/dirs/d1") == 1
    assert (await store_client.put(F1, json={"epoch": 1, "tier": "b"})).json()["epoch"] == 2
    assert (await store_client.delete(F1 + "?epoch=1")).status_code == 204  # the meta's epoch


async def test_null_epoch_is_no_check(store_client):
    """E5."""
    await setup(store_client)
    assert (await store_client.put("/registry/dirs/d1", json={"epoch": None})).json()["epoch"] == 2
    assert (await store_client.put(F1, json={"epoch": None, "meta": {"epoch": None}})).status_code == 200


async def test_parents_move_when_children_come_and_go(store_client):
    """E6: the registry when a group comes and goes, a group when a resource does."""
    await install(store_client, dirs_model())
    registry = await epoch(store_client, "/registry")
    await store_client.put("/registry/dirs/d1", json={})
    assert await epoch(store_client, "/registry") == registry + 1
    await store_client.put(F1, json={})
    assert await epoch(store_client, "/registry/dirs/d1") == 2
    await store_client.delete(F1)
    assert await epoch(store_client, "/registry/dirs/d1") == 3
    await store_client.delete("/registry/dirs/d1")
    assert await epoch(store_client, "/registry") == registry + 2


async def test_parents_stay_when_children_change(store_client):
    """E7."""
    await setup(store_client)
    registry, group = await epoch(store_client, "/registry"), await epoch(store_client, "/registry/dirs/d1")
    await store_client.put(F1, json={"tier": "b"})
    await store_client.put("/registry/dirs/d1", json={"region": "x"})
    assert await epoch(store_client, "/registry") == registry
    assert await epoch(store_client, "/registry/dirs/d1") == group + 1  # its own update only


async def test_meta_epoch_moves_on_meta_and_version_set(store_client):
    """E8: not on version updates (through the resource or the version), yes on a version added,
    a version deleted, and the meta's own attributes."""
    await setup(store_client)
    await store_client.put(F1, json={"tier": "b"})
    await store_client.put(F1 + "/versions/1", json={"tier": "c"})
    assert await epoch(store_client, F1 + "/meta") == 1
    await store_client.post(F1 + "/versions", json={"2": {}})
    assert await epoch(store_client, F1 + "/meta") == 2
    await store_client.delete(F1 + "/versions/2")
    assert await epoch(store_client, F1 + "/meta") == 3
    await store_client.patch(F1 + "/meta", json={"labels": {"k": "v"}})
    assert await epoch(store_client, F1 + "/meta") == 4


async def test_registry_epoch_moves_with_its_model(store_client):
    """E9."""
    before = await epoch(store_client, "/registry")
    await install(store_client, dirs_model())
    assert await epoch(store_client, "/registry") == before + 1
    await install(store_client, dirs_model())  # the same model: nothing changed
    assert await epoch(store_client, "/registry") == before + 1


async def test_default_version_change_moves_meta_only(store_client):
    """E10."""
    await setup(store_client)
    await store_client.post(F1 + "/versions", json={"2": {}})
    versions = {v: await epoch(store_client, f"{F1}/versions/{v}") for v in ("1", "2")}
    meta = await epoch(store_client, F1 + "/meta")
    r = await store_client.patch(F1 + "/meta", json={"defaultversionid": "1"})
    assert r.json()["epoch"] == meta + 1 and r.json()["defaultversionid"] == "1"
    assert {v: await epoch(store_client, f"{F1}/versions/{v}") for v in ("1", "2")} == versions


async def test_indirect_ancestor_change_moves_version(store_client):
    """E11: deleting a version's ancestor makes it a root (core/model.md "Deleted Ancestor")."""
    await setup(store_client)
    await store_client.post(F1 + "/versions", json={"2": {}})
    assert (await store_client.get(F1 + "/versions/2")).json()["ancestorid"] == "1"
    await store_client.delete(F1 + "/versions/1")
    v2 = (await store_client.get(F1 + "/versions/2")).json()
    assert v2["ancestorid"] == "2" and v2["epoch"] == 2


async def test_resource_shows_default_version_epoch(store_client):
    """E12."""
    await setup(store_client)
    r = await store_client.put(F1, json={"epoch": 1, "tier": "b"})
    assert r.status_code == 200 and r.json()["epoch"] == 2
    await store_client.patch(F1 + "/meta", json={"labels": {"k": "v"}})
    assert await epoch(store_client, F1) == 2 and await epoch(store_client, F1 + "/versions/1") == 2


async def test_xref_back_to_normal_epoch(store_client):
    """E13: the source's meta epoch after turning back into a normal resource is above both its
    own and the target's."""
    await setup(store_client)
    for n in range(2, 6):  # the target's meta epoch reaches 5
        await store_client.patch(F1 + "/meta", json={"labels": {"n": str(n)}})
    target = await epoch(store_client, F1 + "/meta")
    x = "/registry/dirs/d2/files/x"
    assert (await store_client.put(x, json={"meta": {"xref": "/dirs/d1/files/f1"}})).status_code == 201
    r = await store_client.put(x + "/meta", json={"xref": None})
    assert r.status_code == 200, r.text
    assert r.json()["epoch"] == target + 1


async def test_xref_request_checks_meta_epoch(store_client):
    """E14: an existing normal resource turned into a cross-reference, with a stale meta epoch."""
    await setup(store_client)
    await store_client.put("/registry/dirs/d2/files/x", json={})
    r = await store_client.put("/registry/dirs/d2/files/x", json={"meta": {"xref": "/dirs/d1/files/f1", "epoch": 7}})
    assert_problem(r, 400, "mismatched_epoch")
    r = await store_client.put("/registry/dirs/d2/files/x", json={"meta": {"xref": "/dirs/d1/files/f1", "epoch": 1}})
    assert r.status_code == 200, r.text


async def test_misplaced_epoch(store_client):
    """E15: ``DELETE`` of a resource collection naming an epoch outside ``meta``."""
    await setup(store_client)
    r = await store_client.request("DELETE", "/registry/dirs/d1/files", json={"f1": {"epoch": 1}})
    assert_problem(r, 400, "misplaced_epoch")
    r = await store_client.request("DELETE", "/registry/dirs/d1/files", json={"f1": {"meta": {"epoch": 2}}})
    assert_problem(r, 400, "mismatched_epoch")
    r = await store_client.request("DELETE", "/registry/dirs/d1/files", json={"f1": {"epoch": 5, "meta": {"epoch": 1}}})
    assert r.status_code == 204, r.text
