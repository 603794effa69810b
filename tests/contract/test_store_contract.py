"""The contract every :class:`~xreg.storage.base.Store` backend passes.

The ``store`` fixture (``conftest.py``) runs each test once per backend. Filter and sort results
are checked against the reference semantics, :func:`xreg.registry.filters.matches` and
:func:`xreg.registry.filters.compare_key`.

Choices this suite pins down where ``base.py`` leaves room:

* ``prune(keep_revisions=N)`` keeps as-of reads working for the ``N`` revisions before the
  current one: afterwards ``oldest_revision() == current - N``. The horizon never moves back.
* ``changes(since)`` with ``0 < since < oldest_revision()`` raises ``RevisionGone`` (the pruned
  tombstones would be missing from the feed); ``since=0`` always works.
* A descending sort reverses the whole order, ties (by key) included (core spec, "Sort Flag").
"""

from __future__ import annotations

import importlib.util
import itertools
import random
from dataclasses import replace

import pytest

from xreg.registry.filters import parse_filter
from xreg.storage.errors import Conflict, RevisionGone
from xreg.storage.records import EntityRecord, Query, Write
from xreg.storage.semantics import RANK, Condition, Cursor, Sort, compare_key, cursor_for, matches

GROUPS = "messagegroups"
MESSAGES = "messagegroups/messages"
VERSIONS = "messagegroups/messages/versions"

needs_filters = pytest.mark.skipif(
    importlib.util.find_spec("xreg.registry.filters") is None,
    reason="xreg.registry.filters (the reference filter/sort semantics) does not exist yet",
)


def group(gid: str, doc: dict | None = None, **kw) -> Write:
    return Write(f"/messagegroups/{gid}", "group", GROUPS, {"messagegroupid": gid, **(doc or {})}, **kw)


def message(gid: str, mid: str, doc: dict | None = None, **kw) -> Write:
    return Write(f"/messagegroups/{gid}/messages/{mid}", "resource", MESSAGES, {"messageid": mid, **(doc or {})}, **kw)


def gone(xid: str, ctype: str = MESSAGES, kind: str = "resource", **kw) -> Write:
    return Write(xid, kind, ctype, None, **kw)


def keys(page) -> list[str]:
    return [r.key for r in page.items]


def record(w: Write) -> EntityRecord:
    return EntityRecord(w.xid, w.kind, w.ctype, w.doc)


# -- basics --------------------------------------------------------------------------------------


async def test_commit_and_get_round_trip(store):
    doc = {"name": "Orders", "n": 3, "ratio": 0.25, "big": 2**40, "ok": True, "off": False, "none": None,
           "tags": ["a", 1, False, None], "labels": {"team": "Blue", "app.tier": "web"},
           "text": "Grüße – ✓", "nested": {"deep": {"er": [1, {"x": "y"}]}}}
    rev = await store.commit([group("Orders", doc), message("Orders", "m1")], note="create")
    assert rev > 0
    rec = await store.get("/messagegroups/Orders")
    assert rec == EntityRecord("/messagegroups/Orders", "group", GROUPS, {"messagegroupid": "Orders", **doc}, revision=rev)
    assert rec.key == "/messagegroups/orders" and not rec.deleted
    assert await store.get("/messagegroups/none") is None
    many = await store.get_many(["/messagegroups/Orders", "/messagegroups/Orders/messages/m1", "/messagegroups/x"])
    assert set(many) == {"/messagegroups/orders", "/messagegroups/orders/messages/m1"}
    assert many["/messagegroups/orders/messages/m1"].kind == "resource"
    assert many["/messagegroups/orders/messages/m1"].ctype == MESSAGES


async def test_get_many_with_many_keys(store):
    writes = [message("g", f"m{i:04d}", {"i": i}) for i in range(1200)]
    await store.commit(writes)
    calls = store.stats.calls.get("get_many", 0)
    found = await store.get_many([w.xid.upper() for w in writes] + ["/nope"])
    assert len(found) == 1200
    assert found["/messagegroups/g/messages/m0777"].doc["i"] == 777
    assert store.stats.calls.get("get_many", 0) == calls + 1


async def test_revisions_strictly_increase(store):
    assert await store.current_revision() == 0
    revs = [await store.commit([group(f"g{i}")]) for i in range(5)]
    assert revs[0] > 0 and all(a < b for a, b in itertools.pairwise(revs))
    assert await store.current_revision() == revs[-1]
    assert await store.commit([]) == revs[-1]
    assert await store.current_revision() == revs[-1]
    with pytest.raises(Conflict):
        await store.commit([group("g0", expect=None)])
    assert await store.current_revision() == revs[-1]
    nxt = await store.commit([group("g0", {"v": 2})])
    assert nxt > revs[-1]
    assert (await store.get("/messagegroups/g0")).revision == nxt
    assert (await store.get("/messagegroups/g1")).revision == revs[1]


async def test_expect_conflicts_write_nothing(store):
    r1 = await store.commit([group("a"), group("b")])
    with pytest.raises(Conflict) as exc:
        await store.commit([group("c", expect=None), group("a", {"v": 2}, expect=None)])
    assert exc.value.xid == "/messagegroups/a"
    assert await store.current_revision() == r1
    assert await store.get("/messagegroups/c") is None
    assert "v" not in (await store.get("/messagegroups/a")).doc
    with pytest.raises(Conflict):
        await store.commit([group("a", {"v": 2}, expect=r1 + 100)])
    with pytest.raises(Conflict):
        await store.commit([group("zz", expect=r1)])  # absent, but a revision was expected
    assert await store.current_revision() == r1
    r2 = await store.commit([group("a", {"v": 2}, expect=r1), group("c", expect=None)])
    assert (await store.get("/messagegroups/a")).doc["v"] == 2
    r3 = await store.commit([gone("/messagegroups/a", GROUPS, "group", expect=r2)])
    with pytest.raises(Conflict):
        await store.commit([group("a", {"v": 3}, expect=r2)])  # it was deleted at r3
    r4 = await store.commit([group("a", {"v": 3}, expect=None)])  # a deleted entity may be re-created
    assert r4 > r3
    await store.commit([group("b", {"v": 9})])  # expect=... skips the check
    assert (await store.get("/messagegroups/b")).doc["v"] == 9


async def test_delete_leaves_a_tombstone(store):
    r1 = await store.commit([group("g"), message("g", "a", {"v": 1}), message("g", "b", {"v": 1})])
    r2 = await store.commit([gone("/messagegroups/g/messages/A")])
    assert await store.get("/messagegroups/g/messages/a") is None
    assert set(await store.get_many(["/messagegroups/g/messages/a", "/messagegroups/g/messages/b"])) == {
        "/messagegroups/g/messages/b"}
    assert keys(await store.list(Query(MESSAGES))) == ["/messagegroups/g/messages/b"]
    assert await store.count(Query(MESSAGES)) == 1
    changes = await store.changes(r1)
    assert [(c.record.key, c.type, c.record.revision) for c in changes] == [
        ("/messagegroups/g/messages/a", "deleted", r2)]
    assert changes[0].record.deleted and changes[0].record.ctype == MESSAGES
    assert keys(await store.list(Query(MESSAGES, as_of=r1))) == [
        "/messagegroups/g/messages/a", "/messagegroups/g/messages/b"]
    await store.commit([gone("/messagegroups/g/messages/never")])  # deleting nothing is harmless
    r4 = await store.commit([message("g", "a", {"v": 2}, expect=None)])
    rec = await store.get("/messagegroups/g/messages/a")
    assert rec.doc["v"] == 2 and rec.revision == r4


async def test_keys_are_case_insensitive(store):
    r1 = await store.commit([group("Orders", {"v": 1})])
    rec = await store.get("/MESSAGEGROUPS/orders")
    assert rec.xid == "/messagegroups/Orders" and rec.key == "/messagegroups/orders"
    r2 = await store.commit([Write("/messagegroups/ORDERS", "group", GROUPS, {"v": 2}, expect=r1)])
    rec = await store.get("/messagegroups/orders")
    assert rec.xid == "/messagegroups/ORDERS" and rec.doc == {"v": 2} and rec.revision == r2
    assert await store.count(Query(GROUPS)) == 1
    with pytest.raises(Conflict):
        await store.commit([group("orders", expect=None)])
    assert list(await store.get_many(["/messagegroups/orders", "/MessageGroups/Orders"])) == ["/messagegroups/orders"]
    assert keys(await store.list(Query(GROUPS, keys=("/MESSAGEGROUPS/ORDERS", "/messagegroups/x")))) == [
        "/messagegroups/orders"]


# -- listing -------------------------------------------------------------------------------------


async def test_list_by_ctype_and_parent(store):
    gids = ["g1", "G1-a", "g1.b", "g10", "g1x", "h"]  # neighbours of "g1" in key order
    writes = [group(g) for g in gids]
    for g in gids:
        writes += [message(g, "m1"), message(g, "M2")]
    writes.append(Write("/messagegroups/g1/messages/m1/versions/v1", "version", VERSIONS, {"versionid": "v1"}))
    await store.commit(writes)
    assert keys(await store.list(Query(GROUPS))) == sorted(f"/messagegroups/{g.lower()}" for g in gids)
    page = await store.list(Query(MESSAGES, parent="/messagegroups/G1"))
    assert keys(page) == ["/messagegroups/g1/messages/m1", "/messagegroups/g1/messages/m2"]
    assert [r.xid for r in page.items] == ["/messagegroups/g1/messages/m1", "/messagegroups/g1/messages/M2"]
    assert not page.has_next and not page.has_prev
    everything = sorted(f"/messagegroups/{g.lower()}/messages/{m}" for g in gids for m in ("m1", "m2"))
    assert keys(await store.list(Query(MESSAGES))) == everything
    assert keys(await store.list(Query(MESSAGES, parent="/"))) == everything
    assert keys(await store.list(Query(MESSAGES, parent="/messagegroups/g1-A"))) == [
        "/messagegroups/g1-a/messages/m1", "/messagegroups/g1-a/messages/m2"]
    assert keys(await store.list(Query(MESSAGES, parent="/messagegroups/nope"))) == []
    assert keys(await store.list(Query(VERSIONS, parent="/messagegroups/g1"))) == [
        "/messagegroups/g1/messages/m1/versions/v1"]
    assert keys(await store.list(Query(VERSIONS, parent="/messagegroups/g1x"))) == []
    assert await store.count(Query(MESSAGES, parent="/messagegroups/g1")) == 2


async def test_pagination_in_key_order(store):
    writes = [message(g, m) for g in ("a", "B", "c") for m in ("x1", "X2", "x3", "y", "Z")]
    await store.commit(writes)
    for parent in (None, "/messagegroups/b"):
        expected = sorted(w.key for w in writes if parent is None or w.key.startswith(parent + "/"))
        query = Query(MESSAGES, parent=parent, limit=4)
        got, cursor, first = [], None, True
        while True:
            page = await store.list(replace(query, after=cursor))
            assert page.has_prev == (not first)
            got += keys(page)
            if not page.has_next:
                break
            cursor, first = cursor_for(page.items[-1], None), False
        assert got == expected
        # Backward from the last entity.
        got, cursor = [expected[-1]], Cursor(expected[-1])
        while True:
            page = await store.list(replace(query, before=cursor))
            assert page.has_next
            got = keys(page) + got
            if not page.has_prev:
                break
            cursor = cursor_for(page.items[0], None)
        assert got == expected
    # Both cursors: the page just before ``before``, within the range.
    page = await store.list(Query(MESSAGES, limit=2, after=Cursor("/messagegroups/b/messages/x1"),
                                  before=Cursor("/messagegroups/b/messages/z")))
    assert keys(page) == ["/messagegroups/b/messages/x3", "/messagegroups/b/messages/y"]
    assert page.has_prev and page.has_next
    page = await store.list(Query(MESSAGES, limit=0))
    assert page.items == [] and page.has_next


MISSING = object()
RANKS = [MISSING, None, 0, 1, 1.0, 1.5, -2, 10, 2.5, "alpha", "Alpha", "beta", "BETA", "Gamma", "delta",
         "b", "B10", "b9", True, False]


@needs_filters
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
async def test_keyset_pagination_with_sort_and_concurrent_writes(store, descending):
    """Page forward, then backward, through a sorted collection while entities are inserted
    and deleted between pages: every page is exactly what the current data says it should
    be, and nothing present throughout is skipped or repeated."""
    rnd = random.Random(20 + descending)
    sort = Sort(("rank",), descending)
    model: dict[str, Write] = {}
    counter = iter(range(10_000))

    def new_message() -> Write:
        n = next(counter)
        value = rnd.choice(RANKS)
        w = message("g", f"m{n:03d}" if n % 3 else f"M{n:03d}", {} if value is MISSING else {"rank": value})
        model[w.key] = w
        return w

    def position(key: str, value) -> tuple:
        return (compare_key(value), key)

    def ordered() -> list[Write]:
        return sorted(model.values(), key=lambda w: position(w.key, w.doc.get("rank")), reverse=descending)

    def beyond(w: Write, cursor: Cursor, forward: bool) -> bool:
        a, b = position(w.key, w.doc.get("rank")), position(cursor.key, cursor.value)
        return (a > b) == (forward != descending) and a != b

    async def churn() -> set[str]:
        victim = rnd.choice(sorted(model))
        del model[victim]
        await store.commit([gone(victim), new_message()])
        return {victim}

    await store.commit([group("g"), group("h"), message("h", "x", {"rank": 1})] + [new_message() for _ in range(40)])
    query = Query(MESSAGES, parent="/messagegroups/G", sort=sort, limit=6)

    # Forward.
    initial, removed, seen, cursor = set(model), set(), [], None
    for _ in range(100):
        everything = ordered()
        rest = everything if cursor is None else [w for w in everything if beyond(w, cursor, True)]
        page = await store.list(replace(query, after=cursor))
        assert keys(page) == [w.key for w in rest[:6]]
        assert page.has_next == (len(rest) > 6)
        assert page.has_prev == (len(rest) < len(everything))
        seen += keys(page)
        if not page.has_next:
            break
        cursor = cursor_for(page.items[-1], sort)
        removed |= await churn()
    assert len(seen) == len(set(seen))
    assert initial - removed <= set(seen)

    # Backward, from the last entity.
    last = ordered()[-1]
    cursor = cursor_for(record(last), sort)
    initial, removed, seen = set(model), set(), [last.key]
    for _ in range(100):
        everything = ordered()
        rest = [w for w in everything if beyond(w, cursor, False)]
        page = await store.list(replace(query, before=cursor))
        assert keys(page) == [w.key for w in rest[-6:]]
        assert page.has_prev == (len(rest) > 6)
        assert page.has_next == (len(rest) < len(everything))
        seen = keys(page) + seen
        if not page.has_prev:
            break
        cursor = cursor_for(page.items[0], sort)
        removed |= await churn()
    assert len(seen) == len(set(seen))
    assert initial - removed <= set(seen)


# -- conditions ----------------------------------------------------------------------------------

WORDS = ["alpha", "Alpha", "ALPHA", "beta", "Beta-2", "gamma ray", "Straße", "ÄRGER", "a*b", "a?c", "x[1]",
         "", "10", "2.5", "true", "False", "null", "Zeta", "zebra", "alphabet"]
NUMBERS = [0, 1, -3, 2.5, 10, 100, 1e3, 7, 1.0, -0.5, 12345678901]
TAGS = ["red", "Green", "BLUE", "alpha", 3, 2.5, True, False, None, "", "a*b"]
VALUE_TEXTS = ["0", "1", "-3", "2.5", "10", "1e3", "+7", "007", ".5", "1.0", "-0.5", "12345678901", "abc",
               "true", "false", "True", "null", "", "a\\*b", "a*b", "x[1]", "a?c", "gamma ray"]


def random_doc(rnd: random.Random) -> dict:
    doc: dict = {}

    def maybe(p: float = 0.75) -> bool:
        return rnd.random() < p

    def word() -> str:
        w = rnd.choice(WORDS)
        return rnd.choice([w, w.upper(), w.lower(), w.swapcase()]) if maybe(0.3) else w

    if maybe():
        doc["name"] = None if maybe(0.1) else word()
    if maybe():
        doc["size"] = rnd.choice(NUMBERS + [None, "10", "abc", True])
    if maybe():
        doc["flag"] = rnd.choice([True, False, "true", "FALSE", 1, 0, None])
    if maybe():
        doc["tags"] = rnd.choice([
            [], rnd.sample(TAGS, rnd.randint(1, 4)), rnd.sample(TAGS, 2), "solo", 5, None, [[1, "red"], {"a": "red"}],
        ])
    if maybe():
        if maybe(0.1):
            doc["labels"] = [{"team": "blue"}]
        else:
            doc["labels"] = {k: word() if maybe(0.8) else rnd.choice(NUMBERS)
                             for k in rnd.sample(["team", "stage", "app.tier", "owner"], rnd.randint(0, 3))}
    if maybe():
        doc["meta"] = {"count": rnd.choice(NUMBERS + [None, "7"]), "defaultversionid": str(rnd.randint(1, 3)),
                       "inner": {"deep": word()} if maybe() else {}}
    return doc


def _as_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return repr(v) if isinstance(v, (int, float)) else str(v)


def random_filter(rnd: random.Random, docs: list[dict]) -> str:
    path = rnd.choice(["name", "size", "flag", "tags", "tags[*]", "tags[0]", "tags[1]", "labels.team",
                       "labels.*", "labels['app.tier']", "labels[*].team", "meta.count", "meta.inner.deep",
                       "meta.*.deep", "meta.defaultversionid", "missing", "labels", "meta.inner", "meta.*"])
    op = rnd.choice(["=", "=", "!=", "<", "<=", ">", ">=", "", "<>"])
    if not op:
        return path
    roll = rnd.random()
    if roll < 0.35:  # a value some document holds, possibly in another case
        doc = rnd.choice(docs)
        v = doc.get(path.split(".")[0].split("[")[0])
        if isinstance(v, dict):
            v = next(iter(v.values()), "x")
        if isinstance(v, list):
            v = v[0] if v else "x"
        text = _as_text(v)
        value = rnd.choice([text, text.upper(), text.lower()])
    elif roll < 0.6 and op in ("=", "!=", "<>"):  # a wildcard
        w = rnd.choice([w for w in WORDS if w] + ["red", "blue"])
        cut = rnd.randint(1, max(1, len(w) - 1))
        value = rnd.choice([w[:cut] + "*", "*" + w[cut:], "*" + w[1:cut] + "*", w[:cut] + "*" + w[cut + 1:],
                            "*", "a\\**", "*\\*b", "*r*e*"])
    else:
        value = rnd.choice(VALUE_TEXTS)
    return path + op + value.replace(",", "")


@needs_filters
@pytest.mark.parametrize("seed", [1, 2])
async def test_conditions_match_the_reference_semantics(store, seed):
    from xreg.errors import XRegistryError
    rnd = random.Random(seed)
    docs = [random_doc(rnd) for _ in range(200)]
    writes = [message("g", f"m{i:03d}", d) for i, d in enumerate(docs)]
    await store.commit(writes + [group("g", {"name": "alpha", "size": 1})])  # a group: another ctype
    by_key = {w.key: w.doc for w in writes}

    def parse(expr: str):
        try:
            return parse_filter(expr).conditions
        except XRegistryError:
            return None

    cases: list[tuple[str, tuple]] = []
    while len(cases) < 250:
        expr = random_filter(rnd, docs)
        conds = parse(expr)
        if conds is not None:
            cases.append((expr, (conds,)))
    while len(cases) < 300:  # ORs of ANDs
        branches = [parse(",".join(random_filter(rnd, docs) for _ in range(rnd.randint(1, 3)))) for _ in range(2)]
        if None not in branches:
            cases.append((" | ".join(str(b) for b in branches), tuple(branches)))

    failures = []
    for expr, any_of in cases:
        want = sorted(k for k, d in by_key.items() if matches(d, any_of))
        got = keys(await store.list(Query(MESSAGES, any_of=any_of)))
        if got != want:
            failures.append(f"{expr}: missing {sorted(set(want) - set(got))[:5]}, extra {sorted(set(got) - set(want))[:5]}")
    assert not failures, f"{len(failures)} of {len(cases)} filters disagree:\n" + "\n".join(failures[:10])

    # count agrees with list, and sorting on scalar attributes follows compare_key.
    for _, any_of in cases[:20]:
        assert await store.count(Query(MESSAGES, any_of=any_of)) == sum(matches(d, any_of) for d in by_key.values())
    for path in (("name",), ("size",), ("flag",), ("meta", "count")):
        for descending in (False, True):
            sort = Sort(path, descending)
            want = sorted(by_key, key=lambda k: (compare_key(_at(by_key[k], path)), k), reverse=descending)
            got = keys(await store.list(Query(MESSAGES, sort=sort)))
            assert got == want, f"sort {path} {'desc' if descending else 'asc'}"


def _at(doc: dict, path: tuple[str, ...]):
    for part in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(part)
    return doc


# -- counts, history, changes, pruning ------------------------------------------------------------


async def test_count_and_count_children(store):
    writes = [group("a"), group("B"), group("c")]
    writes += [message("a", f"m{i}") for i in range(3)] + [message("B", f"m{i}") for i in range(5)]
    r1 = await store.commit(writes)
    assert await store.count(Query(GROUPS)) == 3
    assert await store.count(Query(MESSAGES)) == 8
    assert await store.count(Query(MESSAGES, parent="/messagegroups/b")) == 5
    assert await store.count(Query(MESSAGES, parent="/")) == 8
    assert await store.count(Query(MESSAGES, limit=2, after=Cursor("/messagegroups/b"))) == 8
    assert await store.count(Query(MESSAGES, any_of=((Condition(("messageid",), "eq", "M1"),),))) == 2
    parents = ["/messagegroups/A", "/messagegroups/b", "/messagegroups/c", "/messagegroups/zzz"]
    assert await store.count_children(parents, MESSAGES) == {
        "/messagegroups/a": 3, "/messagegroups/b": 5, "/messagegroups/c": 0, "/messagegroups/zzz": 0}
    assert await store.count_children(["/"], GROUPS) == {"/": 3}
    r2 = await store.commit([gone("/messagegroups/a/messages/m0"), message("c", "new")])
    assert await store.count_children(parents[:3], MESSAGES) == {
        "/messagegroups/a": 2, "/messagegroups/b": 5, "/messagegroups/c": 1}
    # pinned to the current revision (or past it), and a collection type below the children's
    assert await store.count_children(parents[:3], MESSAGES, as_of=r2) == await store.count_children(
        parents[:3], MESSAGES, as_of=r2 + 1) == {"/messagegroups/a": 2, "/messagegroups/b": 5, "/messagegroups/c": 1}
    assert await store.count_children(["/"], MESSAGES) == {"/": 8}
    assert await store.count_children(["/", "/messagegroups/b"], MESSAGES, as_of=r2) == {
        "/": 8, "/messagegroups/b": 5}
    assert await store.count_children(parents[:3], MESSAGES, as_of=r1) == {
        "/messagegroups/a": 3, "/messagegroups/b": 5, "/messagegroups/c": 0}
    assert await store.count(Query(MESSAGES, as_of=r1)) == 8
    assert await store.count(Query(MESSAGES)) == 8


async def test_as_of_reads_reconstruct_earlier_states(store):
    a, b = "/messagegroups/g/messages/a", "/messagegroups/g/messages/b"
    r1 = await store.commit([group("g"), message("g", "a", {"v": 1}), message("g", "b", {"v": 1})])
    r2 = await store.commit([message("g", "a", {"v": 2}, expect=r1), gone(b)])
    r3 = await store.commit([message("g", "c", {"v": 3}), message("g", "B", {"v": 3}, expect=None)])

    async def state(as_of):
        return {r.key: r.doc["v"] for r in (await store.list(Query(MESSAGES, as_of=as_of))).items}

    assert await state(r1) == {a: 1, b: 1}
    assert await state(r2) == {a: 2}
    assert await state(r3) == await state(None) == {a: 2, b: 3, "/messagegroups/g/messages/c": 3}
    assert await state(r3 + 10) == await state(None)
    assert await state(0) == {}
    rec = await store.get(a, as_of=r1)
    assert rec.doc["v"] == 1 and rec.revision == r1
    assert await store.get(b, as_of=r2) is None
    assert (await store.get(b, as_of=r3)).xid == "/messagegroups/g/messages/B"
    assert {k: r.doc["v"] for k, r in (await store.get_many([a, b], as_of=r1)).items()} == {a: 1, b: 1}
    assert await store.count(Query(MESSAGES, as_of=r2)) == 1
    assert await store.count_children(["/messagegroups/g"], MESSAGES, as_of=r2) == {"/messagegroups/g": 1}
    page = await store.list(Query(MESSAGES, as_of=r1, limit=1))
    assert keys(page) == [a] and page.has_next
    page = await store.list(Query(MESSAGES, as_of=r1, limit=1, after=cursor_for(page.items[0], None)))
    assert keys(page) == [b] and not page.has_next and page.has_prev
    cond = ((Condition(("v",), "ge", "2"),),)
    assert keys(await store.list(Query(MESSAGES, as_of=r2, any_of=cond))) == [a]


async def test_changes_since_a_revision(store):
    a, b, c = (f"/messagegroups/g/messages/{m}" for m in "abc")
    r0 = await store.commit([group("g")])
    r1 = await store.commit([message("g", m, {"v": 1}) for m in "abc"])
    r2 = await store.commit([message("g", "a", {"v": 2}), gone(b), message("g", "a", {"v": 3})])

    def summary(changes):
        return [(ch.record.key, ch.type, None if ch.record.deleted else ch.record.doc["v"], ch.record.revision)
                for ch in changes]

    assert summary(await store.changes(r1)) == [(a, "upserted", 3, r2), (b, "deleted", None, r2)]
    assert summary(await store.changes(r0, ctypes=[MESSAGES])) == [
        (a, "upserted", 3, r2), (b, "deleted", None, r2), (c, "upserted", 1, r1)]
    assert summary(await store.changes(r0, until=r1)) == [(a, "upserted", 1, r1), (b, "upserted", 1, r1), (c, "upserted", 1, r1)]
    everything = await store.changes(0)
    assert [ch.record.key for ch in everything] == ["/messagegroups/g", a, b, c]
    assert await store.changes(0, ctypes=[GROUPS]) == everything[:1]
    assert [ch.record.key for ch in await store.changes(0, limit=2)] == ["/messagegroups/g", a]
    assert [ch.record.key for ch in await store.changes(0, after=a)] == [b, c]
    assert [ch.record.key for ch in await store.changes(0, after=a, limit=1)] == [b]
    assert await store.changes(r2) == []


async def test_changes_in_revision_order(store):
    a, b, c = (f"/messagegroups/g/messages/{m}" for m in "abc")
    r1 = await store.commit([group("g"), message("g", "c")])
    r2 = await store.commit([message("g", "b"), message("g", "a")])
    r3 = await store.commit([gone(c)])
    feed = [(ch.record.key, ch.record.revision) for ch in await store.changes(0, by_revision=True)]
    assert feed == [("/messagegroups/g", r1), (a, r2), (b, r2), (c, r3)]  # the same as XID order here; not below
    assert [ch.record.key for ch in await store.changes(r1 - 1, until=r2, by_revision=True)] == [
        "/messagegroups/g", c, a, b]
    paged = [ch.record.key for ch in await store.changes(0, by_revision=True, after=a, after_revision=r2)]
    assert paged == [b, c]
    assert [ch.record.key for ch in await store.changes(0, by_revision=True, after=b, after_revision=r2,
                                                        limit=1)] == [c]
    assert [ch.record.key for ch in await store.changes(0, by_revision=True, after=c, after_revision=r1)] == [a, b, c]


async def test_prune_drops_history(store):
    a, b = "/messagegroups/g/messages/a", "/messagegroups/g/messages/b"
    r1 = await store.commit([group("g"), message("g", "a", {"v": 1}), message("g", "b", {"v": 1})])
    r2 = await store.commit([message("g", "a", {"v": 2})])
    r3 = await store.commit([gone(b)])
    r4 = await store.commit([message("g", "a", {"v": 4})])
    assert await store.oldest_revision() == 0
    assert await store.prune(keep_seconds=3600) == 0  # everything is recent
    assert await store.oldest_revision() == 0

    assert await store.prune(keep_revisions=1) > 0
    assert await store.oldest_revision() == r3 == r4 - 1
    for read in (lambda: store.get(a, as_of=r2), lambda: store.list(Query(MESSAGES, as_of=r1)),
                 lambda: store.count(Query(MESSAGES, as_of=r2)),
                 lambda: store.count_children(["/messagegroups/g"], MESSAGES, as_of=r1),
                 lambda: store.changes(r1)):
        with pytest.raises(RevisionGone) as exc:
            await read()
        assert exc.value.oldest == r3
    assert {r.key: r.doc["v"] for r in (await store.list(Query(MESSAGES, as_of=r3))).items} == {a: 2}
    assert (await store.get(a)).doc["v"] == 4
    assert [ch.record.key for ch in await store.changes(r3)] == [a]
    assert [ch.record.key for ch in await store.changes(0)] == ["/messagegroups/g", a]

    assert await store.prune(keep_revisions=10) == 0  # the horizon never moves back
    assert await store.oldest_revision() == r3
    await store.prune()  # no window: keep only the current state
    assert await store.oldest_revision() == r4
    with pytest.raises(RevisionGone):
        await store.get(a, as_of=r3)
    assert (await store.get(a, as_of=r4)).doc["v"] == 4
    r5 = await store.commit([message("g", "b", {"v": 5}, expect=None)])
    assert r5 > r4 and await store.count(Query(MESSAGES)) == 2


async def test_stats_count_calls(store):
    before = dict(store.stats.calls)
    rev = await store.commit([group("g")])
    await store.current_revision()
    await store.oldest_revision()
    await store.get_many(["/messagegroups/g"])
    await store.list(Query(GROUPS))
    await store.list(Query(GROUPS, limit=1))
    await store.count(Query(GROUPS))
    await store.count_children(["/"], GROUPS)
    await store.changes(0)
    assert (await store.explain(Query(MESSAGES, parent="/messagegroups/g", limit=5))).strip()
    await store.prune(keep_revisions=5)
    calls = store.stats.calls
    delta = {k: calls.get(k, 0) - before.get(k, 0) for k in calls}
    assert delta == {"commit": 1, "current_revision": 1, "oldest_revision": 1, "get_many": 1, "list": 2,
                     "count": 1, "count_children": 1, "changes": 1, "explain": 1, "prune": 1}
    assert store.stats.total == sum(calls.values()) and rev > 0


# -- links: the reverse index ------------------------------------------------------------------


async def test_referrers_finds_the_current_states_linking_to_a_key(store):
    base = "/messagegroups/g/messages/base"
    await store.commit([
        message("g", "base"),
        message("g", "a", {"basemessageuri": base}, links=(base.upper(),)),
        message("g", "b", links=(base, "/messagegroups/g/messages/a")),
        message("g", "c"),
    ])
    found = await store.referrers([base])
    assert [r.key for r in found] == ["/messagegroups/g/messages/a", "/messagegroups/g/messages/b"]
    assert found[0].doc == {"messageid": "a", "basemessageuri": base}  # the record, links not in its doc
    assert [r.key for r in await store.referrers(["/MessageGroups/G/messages/A"])] == ["/messagegroups/g/messages/b"]
    assert await store.referrers(["/messagegroups/g/messages/nothing"]) == []


async def test_referrers_follow_the_current_state_only(store):
    base = "/messagegroups/g/messages/base"
    await store.commit([message("g", "a", links=(base,)), message("g", "b", links=(base,))])
    await store.commit([message("g", "a", {"name": "unlinked"}), gone("/messagegroups/g/messages/b")])
    assert await store.referrers([base]) == []
    await store.commit([message("g", "b", links=(base,))])
    assert [r.key for r in await store.referrers([base])] == ["/messagegroups/g/messages/b"]
    await store.prune(keep_revisions=0)
    assert [r.key for r in await store.referrers([base])] == ["/messagegroups/g/messages/b"]


async def test_a_conflicting_commit_leaves_no_links(store):
    base = "/messagegroups/g/messages/base"
    await store.commit([message("g", "a")])
    with pytest.raises(Conflict):
        await store.commit([message("g", "b", links=(base,)), message("g", "a", links=(base,), expect=None)])
    assert await store.referrers([base]) == []


# -- text search -------------------------------------------------------------------------------


def titled(mid: str, title: str, body: str = "", **kw) -> Write:
    return message("g", mid, {"name": title}, text=(title, body), **kw)


async def test_search_finds_every_word_and_ranks_titles_first(store):
    await store.commit([
        titled("a", "Earthquake report", "seismic event data"),
        titled("b", "Weather", "an earthquake may follow the storm"),
        titled("c", "Earthquakes", "earthquake catalogue: earthquake events"),
        *(titled(f"d{i}", "Tides", "sea level") for i in range(10)),  # (words in most entities say little)
    ])
    page = await store.list(Query(MESSAGES, search=("earthquake",), sort=Sort(RANK)))
    found = keys(page)
    assert set(found) == {f"/messagegroups/g/messages/{m}" for m in "abc"}
    assert found[-1] == "/messagegroups/g/messages/b"  # only in its body
    assert all(r.rank is not None for r in page.items)
    assert keys(await store.list(Query(MESSAGES, search=("earthquake", "seismic")))) == ["/messagegroups/g/messages/a"]
    assert await store.count(Query(MESSAGES, search=("EARTHQUAKES",))) == 3  # folded, stemmed
    assert await store.count(Query(MESSAGES, search=("volcano",))) == 0


async def test_search_pages_by_relevance_and_combines_with_conditions(store):
    await store.commit([titled(f"m{i}", f"sensor {i}", "sensor " * (i + 1)) for i in range(7)]
                       + [titled("other", "sensor", "")] + [titled(f"t{i}", "tides") for i in range(10)])
    seen, after = [], None
    while True:
        page = await store.list(Query(MESSAGES, search=("sensor",), sort=Sort(RANK), limit=3, after=after))
        seen += keys(page)
        if not page.has_next:
            break
        after = cursor_for(page.items[-1], Sort(RANK))
    assert len(seen) == len(set(seen)) == 8
    only = Query(MESSAGES, search=("sensor",), any_of=((Condition(("name",), "eq", "sensor 3"),),))
    assert keys(await store.list(only)) == ["/messagegroups/g/messages/m3"]


async def test_search_reads_as_of_a_revision(store):
    first = await store.commit([titled("a", "Earthquake")])
    await store.commit([titled("a", "Flood")])
    assert await store.count(Query(MESSAGES, search=("earthquake",))) == 0
    assert keys(await store.list(Query(MESSAGES, search=("earthquake",), as_of=first))) == ["/messagegroups/g/messages/a"]
    await store.prune(keep_revisions=0)
    assert keys(await store.list(Query(MESSAGES, search=("flood",)))) == ["/messagegroups/g/messages/a"]


async def test_parents_restrict_to_the_children_of_any_of_them(store):
    await store.commit([group("a"), group("ab"), group("b"), group("c"),
                        message("a", "m1", {"p": "x"}), message("a", "m2"), message("ab", "m1"),
                        message("b", "m1", {"p": "x"}), message("c", "m1", {"p": "x"})])
    by = Query(MESSAGES, parents=("/messagegroups/A", "/messagegroups/b"))
    assert keys(await store.list(by)) == ["/messagegroups/a/messages/m1", "/messagegroups/a/messages/m2",
                                          "/messagegroups/b/messages/m1"]  # not /ab's: a key range, not a prefix
    assert await store.count(by) == 3
    cond = replace(by, any_of=((Condition(("p",), "eq", "x"),),), sort=Sort(("messageid",), descending=True))
    assert keys(await store.list(cond)) == ["/messagegroups/b/messages/m1", "/messagegroups/a/messages/m1"]
    assert keys(await store.list(Query(MESSAGES, parents=()))) == []
    assert keys(await store.list(replace(by, limit=1, after=Cursor("/messagegroups/a/messages/m2")))) == [
        "/messagegroups/b/messages/m1"]
