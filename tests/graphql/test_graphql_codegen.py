"""Clients need no guessing: GraphQL Code Generator, run with the documented configuration
(``docs/codegen.ts``) against a live gateway on 127.0.0.1, gives types a small client compiles
with ``tsc --strict`` — scalars mapped, non-null where the gateway promises it.

The npm packages are pinned in ``tests/codegen/package-lock.json`` and installed by
``make assets`` (or here, by ``npm ci``, when missing). Without npm the test is skipped."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from tests.corpus import REPO
from tests.graphql.conftest import make_settings, open_registry, serve_uvicorn

CODEGEN = REPO / "tests" / "codegen"
CONFIG = REPO / "docs" / "codegen.ts"


async def _run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    process = await asyncio.create_subprocess_exec(
        *map(str, command), cwd=cwd, env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await process.communicate()
    text = out.decode(errors="replace")
    assert process.returncode == 0, f"{' '.join(map(str, command))} failed:\n{text}"
    return text


async def _installed() -> Path:
    """The pinned packages' bin directory, installed with ``npm ci`` when missing."""
    bin_dir, installed = CODEGEN / "node_modules" / ".bin", CODEGEN / "node_modules" / ".package-lock.json"
    lock = CODEGEN / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm (Node.js) is not installed: the Code Generator check needs it")
        await _run(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", cwd=CODEGEN)
    return bin_dir


async def test_codegen_types_from_the_live_gateway_compile_a_strict_client(corpus_db, tmp_path):
    if shutil.which("node") is None:
        pytest.skip("node (Node.js) is not installed: the Code Generator check needs it")
    bin_dir = await _installed()
    work = tmp_path / "client"
    work.mkdir()
    shutil.copy(CODEGEN / "client.ts", work / "client.ts")
    generated = work / "graphql.ts"
    async with open_registry(corpus_db) as registry, serve_uvicorn(make_settings(tmp_path), registry) as url:
        await _run(bin_dir / "graphql-codegen", "--config", CONFIG, cwd=CODEGEN, env={
            "XREG_GRAPHQL_URL": f"{url}/graphql", "CODEGEN_DOCUMENTS": str(CODEGEN / "operations.graphql"),
            "CODEGEN_OUTPUT": str(generated)})
    types = generated.read_text(encoding="utf-8")
    assert "export type JsonValue" in types and "Timestamp: { input: string; output: string; }" in types
    scalars = types[types.index("export type Scalars = {"):]
    scalars = scalars[:scalars.index("};")]
    assert "any" not in scalars and "unknown" not in scalars, scalars  # (client.ts checks the same with tsc)
    assert "registryid: string" in types  # the registry is non-null: no optional chain needed
    await _run(bin_dir / "tsc", "--strict", "--noEmit", "--target", "es2020", "--module", "es2020",
               "--moduleResolution", "bundler", "--lib", "es2020", "client.ts", cwd=work)
