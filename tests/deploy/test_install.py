"""The gateway installed as operators install it, and the connector as data teams do.

The gateway: its wheel built from the sources the Dockerfile copies (GraphiQL's assets included),
installed with no extras into a fresh virtual environment under ``requirements.lock``, exactly
as the Dockerfile's build stage does, then used from a directory outside the repository (the
source tree is never importable): every module imports, the Dockerfile's smoke step passes,
``xreg-gateway import`` loads a document and ``xreg-gateway serve`` answers health, GraphQL,
GraphiQL, the bulk read and the xRegistry API, and stops with status 0 on SIGTERM.

The connector: its wheel installed with no extras into another fresh environment, which holds
none of the server's packages and reads the served gateway through the connector's own clients
(GraphQL and the bulk read; no Spark job).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa
import pytest

from gateway.graphiql import sri_sha384
from tests.corpus import REPO, XREG_DATA
from tests.support.live import bound_socket

#: What the Dockerfile's build stage copies to build the wheel from (and ``requirements.lock``).
GATEWAY_SOURCES = ("pyproject.toml", "README.md", "gateway", "resolvers", "adapters", "xreg")
#: Left behind in source folders by builds and runs; never part of what is built.
BUILD_LEFTOVERS = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
LOCK = REPO / "requirements.lock"
MANIFEST = REPO / "gateway" / "static" / "graphiql.manifest.json"
#: A small real document: 6 endpoints, 7 message groups, 1 schema group.
DOCUMENT = XREG_DATA / "contoso-erp-jsons07.xreg.json"
#: ``/healthz`` is asked at most this many times while the server starts, a quarter second
#: apart unless the server exits first.
HEALTH_ATTEMPTS = 480
#: Packages only the server needs; the connector's environment must hold none of them.
SERVER_PACKAGES = ("gateway", "resolvers", "adapters", "xreg", "strawberry", "starlette", "uvicorn")
#: A script or stylesheet of the GraphiQL page: its URL and its integrity attribute.
ASSET_TAG = re.compile(r'(?:src|href)="(graphiql/assets/[^"]+)" integrity="([^"]+)"')

#: Imports every module of the gateway's packages; prints where they come from and what failed.
IMPORT_ALL = textwrap.dedent("""
    import importlib, json, pkgutil
    failed, origins = {}, {}
    for top in ("gateway", "resolvers", "adapters", "xreg"):
        package = importlib.import_module(top)
        origins[top] = package.__file__
        for module in pkgutil.walk_packages(package.__path__, top + "."):
            if module.name.rpartition(".")[2] == "__main__":  # a program, not a module to import
                continue
            try:
                importlib.import_module(module.name)
            except Exception as exc:
                failed[module.name] = repr(exc)
    print(json.dumps({"failed": failed, "origins": origins}))
""")

#: In the connector's environment: which server packages are importable, and where the connector is.
CONNECTOR_ALONE = textwrap.dedent("""
    import importlib.util, json, sys
    import pyspark_xregistry
    print(json.dumps({"server": [m for m in sys.argv[1:] if importlib.util.find_spec(m) is not None],
                      "connector": pyspark_xregistry.__file__}))
""")

#: In the connector's environment: the registries by GraphQL, then one entity type by the bulk read.
CONNECTOR_READ = textwrap.dedent("""
    import json, sys
    from pyspark_xregistry.bulk import BulkClient, KeyRange
    from pyspark_xregistry.client import ClientConfig, GatewayClient
    config = ClientConfig(url=sys.argv[1], retries=0)
    with GatewayClient(config) as client:
        states = client.registry_states()
    found = {"registries": {r: s.revision for r, s in states.items()}, "xids": {}}
    for registry, state in states.items():
        with BulkClient(config, "messagegroups") as bulk:
            batches = bulk.read(KeyRange(registry, state.revision, state.instance, None, None, 0))
        found["xids"][registry] = [x for b in batches for x in b.column("xid").to_pylist()]
    print(json.dumps(found))
""")


def environ(**settings: str) -> dict[str, str]:
    """This process's environment without Python path settings or gateway settings of its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith(("XREG_", "PROMETHEUS_"))}
    return env | settings


def run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env or environ(), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def pip(*args: str | Path, cwd: Path) -> str:
    """This environment's pip (the version `make install` and the Dockerfile pin), with pip's cache."""
    return run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd)


@dataclass(frozen=True)
class Venv:
    """A fresh virtual environment; ``outside``: a working directory outside the repository."""

    root: Path
    outside: Path
    #: pip options of the installation besides the lock (the Dockerfile's: wheels only)
    pip_options: tuple[str, ...] = ()

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def python_isolated(self, code: str, *args: str) -> str:
        """``code`` run by the environment's Python in isolated mode (``-I``: neither the working
        directory nor PYTHONPATH are on the path), from outside the repository."""
        return run([self.python, "-I", "-c", code, *args], self.outside)

    def install(self, wheel: Path) -> None:
        """``wheel`` with its dependencies, no extras, constrained by the lock — the Dockerfile's
        ``pip install`` — by pip outside the environment (``--python``), which holds no pip."""
        pip("--python", self.python, "install", "--quiet", "-c", LOCK, *self.pip_options, wheel, cwd=self.outside)


def fresh_venv(base: Path, name: str, pip_options: tuple[str, ...] = ()) -> Venv:
    outside = base / f"{name}-work"
    outside.mkdir()
    assert not outside.resolve().is_relative_to(REPO.resolve())
    run([sys.executable, "-m", "venv", "--without-pip", base / name], outside)
    return Venv(base / name, outside, pip_options)


def build_wheel(sources: Path, out: Path) -> Path:
    pip("wheel", "--quiet", "--no-deps", "--wheel-dir", out, sources, cwd=sources)
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def gateway_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The gateway's wheel installed as the Dockerfile installs it."""
    check = subprocess.run([sys.executable, REPO / "web" / "copy_assets.py", "--check"], capture_output=True, text=True)
    assert check.returncode == 0, "GraphiQL's assets are not in place; run `make assets`\n" + check.stderr
    base = tmp_path_factory.mktemp("gateway")
    sources = base / "src"  # a copy: building leaves build/ and *.egg-info behind in the source folder
    sources.mkdir()
    for name in GATEWAY_SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, sources / name, ignore=BUILD_LEFTOVERS)
        else:
            shutil.copy2(REPO / name, sources / name)
    wheel = build_wheel(sources, base / "wheels")
    venv = fresh_venv(base, "venv", ("--only-binary=:all:",))
    venv.install(wheel)
    return venv


@pytest.fixture(scope="module")
def connector_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The connector's wheel (``pyspark-xregistry``) installed as a data team installs it."""
    base = tmp_path_factory.mktemp("connector")
    sources = shutil.copytree(REPO / "spark", base / "src", ignore=BUILD_LEFTOVERS)
    wheel = build_wheel(sources, base / "wheels")
    assert wheel.name.startswith("pyspark_xregistry-")
    venv = fresh_venv(base, "venv")
    venv.install(wheel)
    return venv


def test_the_lock_pins_every_runtime_dependency_at_its_version():
    pins = dict(line.split("==") for line in LOCK.read_text(encoding="utf-8").split())
    locked = {name.lower().replace("_", "-"): version for name, version in pins.items()}
    for requirement in tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]:
        name, _, version = requirement.partition("==")
        assert version, f"{requirement}: pin an exact version"
        assert locked.get(re.sub(r"\[.*\]", "", name).lower().replace("_", "-")) == version, requirement


@pytest.mark.venv
def test_every_module_imports_from_a_plain_install(gateway_venv):
    found = json.loads(gateway_venv.python_isolated(IMPORT_ALL))
    assert found["failed"] == {}
    for origin in found["origins"].values():
        assert Path(origin).is_relative_to(gateway_venv.root), origin


@pytest.mark.venv
def test_the_dockerfiles_smoke_step_passes_on_a_plain_install(gateway_venv):
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    smoke = re.findall(r'bin/python -I -c "([^"]+)"', dockerfile)
    assert len(smoke) == 1 and "import gateway.app" in smoke[0] and "ASSETS.load()" in smoke[0], smoke
    gateway_venv.python_isolated(smoke[0])


@pytest.mark.venv
def test_the_connector_installs_without_the_server(connector_venv):
    found = json.loads(connector_venv.python_isolated(CONNECTOR_ALONE, *SERVER_PACKAGES))
    assert found["server"] == []
    assert Path(found["connector"]).is_relative_to(connector_venv.root)


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def logged(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]


@pytest.fixture
def served(gateway_venv: Venv, tmp_path: Path) -> Iterator[Served]:
    """``xreg-gateway import`` of :data:`DOCUMENT` into a fresh data directory, then
    ``xreg-gateway serve`` on a free loopback port, once ``/healthz`` answers; killed if a test
    left it running."""
    env = environ(XREG_DATA_DIR=str(tmp_path / "data"), XREG_LOG_FORMAT="text")
    run([gateway_venv.bin("xreg-gateway"), "import", DOCUMENT], gateway_venv.outside, env)
    with bound_socket() as sock:
        port = sock.getsockname()[1]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:  # the process keeps a descriptor of its own
        proc = subprocess.Popen([str(gateway_venv.bin("xreg-gateway")), "serve", "--host", "127.0.0.1",
                                 "--port", str(port)], cwd=gateway_venv.outside, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    server = Served(proc, f"http://127.0.0.1:{port}", log)
    try:
        wait_until_healthy(server)
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def wait_until_healthy(server: Served) -> None:
    for _ in range(HEALTH_ATTEMPTS):
        try:
            if httpx.get(server.url + "/healthz", timeout=10, trust_env=False).status_code == 200:
                return
        except httpx.TransportError:
            pass
        try:
            code = server.proc.wait(0.25)  # paces the attempts; returns at once if the server exited
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"serve exited with status {code}:\n{server.logged()}")
    raise AssertionError(f"serve never answered /healthz:\n{server.logged()}")


@pytest.mark.venv
def test_a_plain_install_imports_serves_and_stops_cleanly(served, connector_venv):
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    groups = sorted(f"/messagegroups/{gid}" for gid in document["messagegroups"])
    http = httpx.Client(base_url=served.url, timeout=30, trust_env=False)

    health = http.get("/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    revision = health.json()["revision"]
    assert isinstance(revision, int) and revision >= 1

    query = "{ registry { registryid revision messagegroups(first: 50) { totalCount nodes { xid } } } }"
    answer = http.post("/graphql", json={"query": query})
    assert answer.status_code == 200 and "errors" not in answer.json(), answer.text
    registry = answer.json()["data"]["registry"]
    assert registry["revision"] == revision
    assert registry["messagegroups"]["totalCount"] == len(groups)
    assert sorted(n["xid"] for n in registry["messagegroups"]["nodes"]) == groups

    page = http.get("/graphiql")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    loaded = dict(ASSET_TAG.findall(page.text))  # asset URL (relative to the page) -> integrity
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))["files"]
    assert sorted(url.split("/")[-1].split("?")[0] for url in loaded) == sorted(manifest)
    for url, integrity in loaded.items():
        assert integrity == manifest[url.split("/")[-1].split("?")[0]]["integrity"]
        asset = http.get("/" + html.unescape(url))
        assert asset.status_code == 200 and sri_sha384(asset.content) == integrity, url

    rows = http.get("/bulk/rows", params={"registry": registry["registryid"], "entity": "messagegroups",
                                           "asOf": revision})
    assert rows.status_code == 200, rows.text
    assert rows.headers["content-type"] == "application/vnd.apache.arrow.stream"
    with pa.ipc.open_stream(rows.content) as reader:
        table = reader.read_all()
    assert sorted(table.column("xid").to_pylist()) == groups
    assert set(table.column("revision").to_pylist()) <= set(range(1, revision + 1))

    api = http.get("/registry")
    assert api.status_code == 200, api.text
    assert api.json()["registryid"] == registry["registryid"] and api.json()["messagegroupscount"] == len(groups)

    # the connector's own clients, from its environment without the server's packages
    read = json.loads(connector_venv.python_isolated(CONNECTOR_READ, served.url + "/graphql"))
    assert read["registries"] == {registry["registryid"]: revision}
    assert sorted(read["xids"][registry["registryid"]]) == groups

    http.close()
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(60) == 0, served.logged()
    assert f"registry {registry['registryid']!r} closed" in served.logged()
