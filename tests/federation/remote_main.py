"""A remote for the federation tests: our gateway serving real documents, in its own process.

``python -m tests.federation.remote_main <registry-id> <data-dir> <documents JSON> <settings JSON>``
binds a free port of 127.0.0.1, loads the documents, prints ``PORT <n>`` and serves until
terminated — or until its standard input closes (the test process is gone). The gateway sits
behind :class:`~tests.federation.servers.Instrumented`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path

from gateway.app import create_app
from tests.corpus import XREG_DATA
from tests.federation.servers import Instrumented, Served, bound_socket
from xreg.config import ApiKey, Settings
from xreg.documents.normalise import normalise
from xreg.documents.reader import read_document
from xreg.registry.service import LocalRegistry
from xreg.storage.sqlite import SQLiteStore


async def load(db: Path, registry_id: str, base_url: str, documents: list[str]) -> None:
    async with LocalRegistry(SQLiteStore(db), registry_id=registry_id, base_url=base_url) as registry:
        for name in documents:
            doc, _ = normalise(read_document(XREG_DATA / name), strict=False)
            await registry.apply_document(doc, note=f"load {name}")


def main() -> None:
    registry_id, data_dir, documents, extra = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
    if "api_keys" in extra:
        extra["api_keys"] = [ApiKey(**k) for k in extra["api_keys"]]
    sock = bound_socket()
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/registry"
    settings = Settings(data_dir=data_dir, registry_id=registry_id, base_url=base_url, config_watch_seconds=0, **extra)
    asyncio.run(load(data_dir / "registry.db", registry_id, base_url, documents))
    server = Served(Instrumented(create_app(settings)), sock)

    def orphaned() -> None:  # the parent holds our stdin: EOF means it is gone
        sys.stdin.read()
        server.server.should_exit = True

    threading.Thread(target=orphaned, daemon=True).start()
    sock.listen(128)  # connections wait in the backlog until start-up is over, instead of being refused
    print(f"PORT {server.port}", flush=True)
    server.server.run(sockets=[sock])


if __name__ == "__main__":
    main()
