"""A gateway that cannot start exits with a non-zero status (it used to log "Application startup
failed" and stay alive with its port closed, holding the store open)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.corpus import REPO
from tests.support.live import bound_socket


def test_a_failed_start_exits_non_zero(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")  # a federated document that cannot be read: start-up fails after the store opened
    with bound_socket() as sock:
        port = sock.getsockname()[1]
    env = {**os.environ, "XREG_DATA_DIR": str(tmp_path),
           "XREG_REGISTRIES": f'[{{"id": "bad", "kind": "file", "path": "{bad}"}}]'}
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "serve", "--port", str(port)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "Application startup failed" in done.stderr and "could not load" in done.stderr
    assert (tmp_path / "registry.db").exists()  # the store was opened (and closed again) before the failure
