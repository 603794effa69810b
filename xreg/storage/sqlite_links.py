"""The SQLite store's reverse index of links (``Write.links``): schema, upgrade and the page reads.

Schema::

    links(target, xkey, seq) PRIMARY KEY (target, xkey, seq), WITHOUT ROWID; links_seq on seq
        one row per *current, live* state and key it links to: ``target`` the linked key,
        ``xkey`` and ``seq`` the referring state's. A commit drops the rows of the states it
        closes (by ``links_seq``) and adds those of the states it writes (a tombstone links to
        nothing).

The referring key in the primary key makes a page of referrers in key order an index range:
``target = ? AND xkey > ? ORDER BY xkey LIMIT n`` reads ``n`` rows after one seek, whatever the
number of referrers. Several targets are one range each, merged in key order by a compound
``UNION`` (which also drops a state found through two of them): SQLite's merge reads each range
only as far as the page needs, with no sort. A page therefore costs its size plus a seek per
target, where reading every referrer of the targets and sorting them cost a draining worker the
square of their number.

Layout 1 (``links(seq, target)``, no ``xkey``) is rebuilt in place once, from the live states,
when a store opens a file of it (:func:`migrate`).
"""

from __future__ import annotations

from xreg.storage.sqlite_index import Executor, begin_immediate

SCHEMA = """
CREATE TABLE IF NOT EXISTS links (target TEXT NOT NULL, xkey TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (target, xkey, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_seq ON links(seq);
"""
INSERT = "INSERT OR IGNORE INTO links(target, xkey, seq) VALUES (?, ?, ?)"
#: Targets per statement of an ordered page: arms of one compound ``UNION`` (SQLite allows 500).
ARMS = 64

_COLUMNS = "s.xid, s.kind, s.ctype, s.doc, s.rev_from, s.deleted"


def ordered_page(targets: int, after: bool, limit: int | None) -> str:
    """The first ``limit`` live states in key order linking to any of ``targets`` keys (parameters
    ``?1`` … ``?targets``) whose keys follow ``?targets+1`` (when ``after``); :data:`ARMS`
    targets at most. The page is picked in key order; its rows come in no set order (the caller
    sorts them: sorting the joined rows again would take SQLite a temporary B-tree)."""
    since = f" AND xkey > ?{targets + 1}" if after else ""
    arms = " UNION ".join(f"SELECT xkey, seq FROM links WHERE target = ?{i + 1}{since}" for i in range(targets))
    bound = "" if limit is None else f" LIMIT {max(0, int(limit))}"
    return (f"SELECT {_COLUMNS} FROM ({arms} ORDER BY xkey{bound}) AS page "
            f"JOIN states s ON s.seq = page.seq WHERE s.live = 1")


def any_page(targets: int, after: bool, limit: int | None) -> str:
    """Any ``limit`` live states linking to any of ``targets`` keys (after the key ``?targets+1``
    when ``after``): the first link rows found."""
    since = f" AND xkey > ?{targets + 1}" if after else ""
    bound = "" if limit is None else f" LIMIT {max(0, int(limit))}"
    marks = ",".join(f"?{i + 1}" for i in range(targets))
    return (f"SELECT {_COLUMNS} FROM states s WHERE s.live = 1 AND s.seq IN "
            f"(SELECT DISTINCT seq FROM links WHERE target IN ({marks}){since}{bound})")


async def _upgraded(db: Executor) -> bool:
    return "xkey" in [r[1] for r in await db.execute_fetchall("PRAGMA table_info(links)")]


async def migrate(db: Executor) -> bool:
    """Rebuild a ``links`` table of layout 1 (no ``xkey``) from the live states, in one
    transaction; ``True`` if it did. The caller runs it before any other statement of the store."""
    if await _upgraded(db):
        return False
    await begin_immediate(db)
    try:
        if await _upgraded(db):  # another process opening the file upgraded it meanwhile
            await db.execute("COMMIT")
            return False
        await db.execute("CREATE TABLE links_layout2 (target TEXT NOT NULL, xkey TEXT NOT NULL, "
                         "seq INTEGER NOT NULL, PRIMARY KEY (target, xkey, seq)) WITHOUT ROWID")
        await db.execute("INSERT INTO links_layout2(target, xkey, seq) SELECT l.target, s.xkey, s.seq "
                         "FROM links l JOIN states s ON s.seq = l.seq WHERE s.live = 1")
        await db.execute("DROP TABLE links")
        await db.execute("ALTER TABLE links_layout2 RENAME TO links")
        await db.execute("CREATE INDEX links_seq ON links(seq)")
    except BaseException:
        await db.execute("ROLLBACK")
        raise
    await db.execute("COMMIT")
    return True
