"""Filters and counts answered from the typed-attribute index (``xreg.storage.indexed``), on
every backend: the same answers as the reference semantics, kept right across updates and
deletions, and as-of reads untouched."""

from __future__ import annotations

import random

from xreg.storage.records import Query, Write
from xreg.storage.semantics import Condition, Cursor, matches

MESSAGES = "messagegroups/messages"
GROUPS = "messagegroups"
MAT = ("default", "@materialised", "attributes")


def doc(rnd: random.Random, i: int) -> dict:
    attrs: dict = {"messageid": f"m{i:03d}"}
    if rnd.random() < 0.9:
        attrs["protocol"] = rnd.choice(["KAFKA", "kafka", "AMQP", "MQTT", "Kafka/2", 5, True, None, ["KAFKA", "HTTP"]])
    if rnd.random() < 0.6:
        attrs["labels"] = {k: rnd.choice(["blue", "Blue", "red", 1, False]) for k in rnd.sample(["team", "tier"], 1)}
    if rnd.random() < 0.5:
        attrs["usage"] = rnd.sample(["publish", "subscribe", "Publish"], rnd.randint(0, 2))
    if rnd.random() < 0.2:
        attrs["deprecated"] = {"effective": "2025-01-01T00:00:00Z"}
    if rnd.random() < 0.5:
        attrs["isdefault"] = rnd.choice([True, False, "true", "TRUE"])
    return {"meta": {"messageid": f"m{i:03d}", "epoch": 1}, "default": {**attrs, "@materialised": {"attributes": attrs}}}


def conditions() -> list[tuple[tuple[Condition, ...], ...]]:
    eq = lambda path, v, **kw: Condition(path, "eq", v, **kw)  # noqa: E731
    single = [
        eq(("default", "protocol"), "kafka"), eq(("default", "protocol"), "KAF*", wildcard=True),
        eq(("default", "protocol"), "*a*", wildcard=True), eq(("default", "protocol"), "5"),
        eq(("default", "protocol"), "true"), eq(("default", "protocol"), "TRUE"),
        eq((*MAT, "protocol"), "http"), eq((*MAT, "labels", "team"), "blue"), eq((*MAT, "labels", "team"), "1"),
        eq((*MAT, "labels", "tier"), "false"), Condition((*MAT, "labels", "team"), "exists"),
        Condition((*MAT, "labels"), "exists"), Condition((*MAT, "deprecated"), "exists"),
        eq(("default", "usage"), "publish"), Condition(("default", "usage"), "exists"),
        eq(("default", "isdefault"), "true"), eq(("default", "messageid"), "M007"),
        eq(("meta", "messageid"), "m01*", wildcard=True), eq(("default", "protocol"), "nothing-has-this"),
        eq(("default", "protocol"), "*", wildcard=True),
    ]
    out: list[tuple[tuple[Condition, ...], ...]] = [((c,),) for c in single]
    out.append(((single[0], single[7]),))  # two indexed
    out.append(((single[7], single[10], single[1]),))  # one value, a presence test and a wildcard
    out.append(((single[12], single[14]),))  # two presence tests
    out.append(((single[13], Condition(("default", "messageid"), "gt", "m050")),))  # indexed and a range
    out.append(((single[0], Condition(("default", "isdefault"), "ne", "true")),))  # indexed and a negation
    out.append(((single[7],), (single[3],)))  # OR
    return out


async def test_indexed_filters_and_counts_match_the_reference(store):
    rnd = random.Random(7)
    docs = {f"/messagegroups/g{i % 3}/messages/m{i:03d}": doc(rnd, i) for i in range(120)}
    await store.commit([Write(f"/messagegroups/g{g}", "group", GROUPS, {"messagegroupid": f"g{g}"}) for g in range(3)])
    first = await store.commit([Write(k, "resource", MESSAGES, d) for k, d in docs.items()])
    before = dict(docs)

    async def check(current: dict[str, dict], as_of: int | None = None) -> None:
        for any_of in conditions():
            for parent in (None, "/messagegroups/g1"):
                want = sorted(k for k, d in current.items() if matches(d, any_of)
                              and (parent is None or k.startswith(parent + "/")))
                query = Query(MESSAGES, parent=parent, any_of=any_of, as_of=as_of)
                assert await store.count(query) == len(want), (any_of, parent)
                got: list[str] = []
                cursor = None
                while True:  # keyset pages of 7
                    page = await store.list(Query(MESSAGES, parent=parent, any_of=any_of, as_of=as_of,
                                                  limit=7, after=cursor))
                    got += [r.key for r in page.items]
                    if not page.has_next:
                        break
                    cursor = Cursor(page.items[-1].key)
                assert got == want, (any_of, parent)
                if len(want) > 2:  # a page before a cursor, and what lies on both sides of it
                    page = await store.list(Query(MESSAGES, parent=parent, any_of=any_of, as_of=as_of,
                                                  limit=2, before=Cursor(want[-1])))
                    assert [r.key for r in page.items] == want[-3:-1] and page.has_next
                    assert page.has_prev == (len(want) > 3)

    await check(docs)
    assert await store.count(Query(MESSAGES)) == 120
    assert await store.count(Query(MESSAGES, parent="/messagegroups/g2")) == 40

    # Updates move entries, deletions drop them and their counts; as-of reads see the old states.
    changed = {k: doc(rnd, 500 + n) for n, k in enumerate(rnd.sample(sorted(docs), 30))}
    deleted = rnd.sample(sorted(set(docs) - set(changed)), 20)
    await store.commit([Write(k, "resource", MESSAGES, d) for k, d in changed.items()]
                       + [Write(k, "resource", MESSAGES, None) for k in deleted])
    docs.update(changed)
    for k in deleted:
        del docs[k]
    await check(docs)
    assert await store.count(Query(MESSAGES)) == 100
    for g in range(3):
        parent = f"/messagegroups/g{g}"
        want = sum(k.startswith(parent + "/") for k in docs)
        assert await store.count(Query(MESSAGES, parent=parent)) == want
        assert (await store.count_children([parent], MESSAGES))[parent] == want
    assert await store.count(Query(GROUPS)) == 3
    await check(before, as_of=first)

    # A deleted entity written again is counted and found again.
    again = deleted[0]
    await store.commit([Write(again, "resource", MESSAGES, before[again])])
    docs[again] = before[again]
    assert await store.count(Query(MESSAGES)) == 101
    await check(docs)


async def test_cross_references_are_found_by_their_presence(store):
    """``meta.xref`` is kept by its presence (``indexed.PRESENCE``): which resources under some
    parents are cross-references is answered by the index, kept across updates and deletions;
    an equality on its value is not looked up, and still answered."""
    xref = ("meta", "xref")

    def resource(i: int, target: str | None) -> Write:
        meta: dict = {"messageid": f"m{i:03d}", "epoch": 1}
        if target is not None:
            meta["xref"] = target
        return Write(f"/messagegroups/g{i % 3}/messages/m{i:03d}", "resource", MESSAGES,
                     {"meta": meta, "default": {"messageid": f"m{i:03d}"}})

    docs = {}
    for i in range(60):
        w = resource(i, f"/messagegroups/g9/messages/T{i}" if i % 4 == 1 else None)
        docs[w.key] = w.doc
    docs["/messagegroups/g0/messages/m999"] = {"meta": {"messageid": "m999", "xref": None}, "default": {}}
    await store.commit([Write(k, "resource", MESSAGES, d) for k, d in docs.items()])
    # A group holding an ``xref`` attribute of its own is another collection: not counted.
    await store.commit([Write("/messagegroups/g1", "group", GROUPS, {"messagegroupid": "g1", "xref": "x"})])

    async def check() -> None:
        for cond in (Condition(xref, "exists"), Condition(xref, "eq", "/MESSAGEGROUPS/g9/messages/t5"),
                     Condition(xref, "null")):
            for parent in (None, "/messagegroups/g1"):
                want = sorted(k for k, d in docs.items() if matches(d, ((cond,),))
                              and (parent is None or k.startswith(parent + "/")))
                query = Query(MESSAGES, parent=parent, any_of=((cond,),))
                assert await store.count(query) == len(want), (cond, parent)
                got: list[str] = []
                cursor = None
                while True:
                    page = await store.list(Query(MESSAGES, parent=parent, any_of=((cond,),), limit=4, after=cursor))
                    got += [r.key for r in page.items]
                    if not page.has_next:
                        break
                    cursor = Cursor(page.items[-1].key)
                assert got == want, (cond, parent)

    await check()
    assert await store.count(Query(MESSAGES, any_of=((Condition(xref, "exists"),),))) == 15
    # An xref dropped, one added, one source deleted.
    dropped, added, deleted = resource(1, None), resource(2, "/messagegroups/g9/messages/new"), resource(5, None)
    await store.commit([dropped, added, Write(deleted.key, "resource", MESSAGES, None)])
    docs[dropped.key], docs[added.key] = dropped.doc, added.doc
    del docs[deleted.key]
    await check()
    assert await store.count(Query(MESSAGES, any_of=((Condition(xref, "exists"),),))) == 14
