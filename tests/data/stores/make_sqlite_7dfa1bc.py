"""Made tests/data/stores/sqlite-7dfa1bc.db with the gateway at commit 7dfa1bc (before the read
indexes): run from a checkout of that commit, ``python make_sqlite_7dfa1bc.py sqlite-7dfa1bc.db``."""

import asyncio
import sys

from gateway.storage.base import Write
from gateway.storage.sqlite import SQLiteStore

M = "messagegroups/messages"


async def main(path: str) -> None:
    async with SQLiteStore(path) as s:
        await s.commit([
            Write("/messagegroups/g1", "group", "messagegroups", {"messagegroupid": "g1", "protocol": "KAFKA"}),
            Write("/messagegroups/g2", "group", "messagegroups", {"messagegroupid": "g2", "protocol": "AMQP"})])
        w = []
        for g in ("g1", "g2"):
            for i in range(20):
                w.append(Write(f"/messagegroups/{g}/messages/m{i:02d}", "resource", M, {
                    "meta": {"messageid": f"m{i:02d}", "epoch": 1},
                    "default": {"messageid": f"m{i:02d}", "protocol": "MQTT" if i % 10 == 0 else "KAFKA",
                                "labels": {"team": "blue" if i % 2 else "red"}}}))
        await s.commit(w)
        # a superseded state, a deletion
        await s.commit([
            Write("/messagegroups/g1/messages/m01", "resource", M,
                  {"meta": {"messageid": "m01"}, "default": {"messageid": "m01", "protocol": "AMQP"}}),
            Write("/messagegroups/g2/messages/m19", "resource", M, None)])
        await s.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


asyncio.run(main(sys.argv[1]))
