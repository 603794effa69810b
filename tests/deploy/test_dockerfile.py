"""The container image's Dockerfile, checked without a container engine: its structure, read with
BuildKit's own parser (the `dockerfile` package), and the parts that can run here — the
HEALTHCHECK command against a live gateway, the CMD against the real command line."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field

import dockerfile
import pytest
import typer.main

from gateway.app import create_app
from gateway.cli import app as cli_app
from tests.deploy.chart import CASES, ROOT
from tests.support.live import LiveServer
from xreg.config import load_settings

#: What a compiler toolchain or headers would be installed as.
COMPILERS = re.compile(r"\b(build-essential|gcc|g\+\+|clang|make|cmake|[\w.+-]+-dev)\b")


@dataclass
class Stage:
    """One FROM … up to the next."""

    image: str
    name: str | None
    commands: list[dockerfile.Command] = field(default_factory=list)

    def all(self, cmd: str) -> list[dockerfile.Command]:
        return [c for c in self.commands if c.cmd == cmd]

    def last(self, cmd: str) -> dockerfile.Command:
        found = self.all(cmd)
        assert found, f"stage {self.name or self.image} has no {cmd}"
        return found[-1]


def stages() -> list[Stage]:
    out: list[Stage] = []
    for command in dockerfile.parse_file(str(ROOT / "Dockerfile")):
        if command.cmd == "FROM":
            image, *rest = command.value
            name = rest[1] if len(rest) == 2 and rest[0].upper() == "AS" else None
            out.append(Stage(image, name))
        else:
            assert out, f"{command.cmd} before the first FROM (line {command.start_line})"
            out[-1].commands.append(command)
    return out


def final() -> Stage:
    return stages()[-1]


def shell(stage: Stage) -> str:
    return "\n".join(" ".join(c.value) for c in stage.all("RUN"))


def test_multi_stage_with_named_build_stages():
    *builders, last = stages()
    assert len(builders) >= 2
    assert all(s.name for s in builders)
    sources = {flag.split("=", 1)[1] for c in last.all("COPY") for flag in c.flags if flag.startswith("--from=")}
    assert sources and sources <= {s.name for s in builders}


def test_base_images_are_pinned_and_slim():
    names = {s.name for s in stages()}
    for stage in stages():
        if stage.image in names:
            continue
        assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+-[\w.-]+(@sha256:[0-9a-f]{64})?|[\w./-]+@sha256:[0-9a-f]{64}",
                            stage.image), f"{stage.image}: pin an exact version tag (or a digest)"
        assert "latest" not in stage.image
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", final().image)


def test_final_stage_runs_as_a_numeric_non_root_user():
    stage = final()
    user = stage.last("USER").value[0]
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric uid lets Kubernetes' runAsNonRoot verify it"
    cmd_line = stage.last("CMD").start_line
    assert stage.last("USER").start_line < cmd_line
    # The chart runs the pod as the same user.
    assert CASES[0].values["podSecurityContext"]["runAsUser"] == int(uid)


def test_final_stage_has_no_compilers_and_no_build_tools():
    stage = final()
    assert not COMPILERS.search(shell(stage)), shell(stage)
    assert "slim" in stage.image
    copied = " ".join(" ".join(c.value) for c in stage.all("COPY"))
    assert "node_modules" not in copied and "/src" not in copied  # only the virtualenv is carried over


def test_no_stage_compiles_anything():
    for stage in stages():
        assert not re.search(r"apt-get install[^\n]*" + COMPILERS.pattern, shell(stage)), stage.name


def test_graphiql_assets_are_built_from_web_in_a_build_stage():
    node = next(s for s in stages() if s.image.startswith("node:"))
    copied = [c.value for c in node.all("COPY")]
    assert ("web/package.json", "web/package-lock.json", "./") in copied
    assert re.search(r"\bnpm ci\b.*--ignore-scripts", shell(node))
    build = next(s for s in stages() if any(f"--from={node.name}" in c.flags for c in s.all("COPY")))
    assert "web/copy_assets.py" in shell(build)  # verified against the manifest (SHA-384) in the build
    assert build != final()


def test_dependencies_are_installed_from_the_lock_as_wheels():
    build = next(s for s in stages() if "pip install" in shell(s) and s != final())
    commands = shell(build)
    install = [line for line in re.split(r"&&|\n", commands) if "pip install" in line and ".whl" in line]
    assert install and "-c requirements.lock" in install[0] and "--only-binary=:all:" in install[0]
    assert "[" not in install[0], "no extras: the plain install is what runs (tests/deploy/test_install.py)"
    pip = re.search(r"pip==(\S+)", (ROOT / "Makefile").read_text(encoding="utf-8"))
    assert pip and f"pip=={pip.group(1)}" in commands  # the same pip as `make install`


def test_exposes_the_port_and_serves_on_all_interfaces():
    stage = final()
    assert stage.last("EXPOSE").value == ("8080",)
    cmd = stage.last("CMD")
    assert cmd.json, "exec form: the server is PID 1 and gets SIGTERM"
    assert list(cmd.value[:4]) == ["xreg-gateway", "serve", "--host", "0.0.0.0"]
    port = cmd.value[cmd.value.index("--port") + 1]
    assert port == "8080"
    # The real command line accepts these arguments.
    serve = typer.main.get_command(cli_app).commands["serve"]
    ctx = serve.make_context("serve", list(cmd.value[2:]))
    assert (ctx.params["host"], ctx.params["port"]) == ("0.0.0.0", 8080)
    # The chart starts the same command.
    container = CASES[0].container()
    assert container["command"] + container["args"] == list(cmd.value)


def healthcheck_code() -> str:
    check = final().last("HEALTHCHECK")
    assert check.value[0] == "CMD" and check.json
    argv = list(check.value[1:])
    assert argv[:2] == ["python", "-c"], "slim images have no curl: the check runs Python"
    assert "http://127.0.0.1:8080/healthz" in argv[2]
    assert {"--interval", "--timeout"} <= {f.split("=")[0] for f in check.flags}
    return argv[2]


def run_check(code: str, port: int) -> int:
    return subprocess.run([sys.executable, "-c", code.replace(":8080/", f":{port}/")], capture_output=True,
                          timeout=30).returncode


def test_healthcheck_passes_on_a_serving_gateway_and_fails_without_one(tmp_path):
    code = healthcheck_code()
    with LiveServer(create_app(load_settings(data_dir=tmp_path, store_url=f"sqlite:///{tmp_path}/r.db"))) as live:
        assert run_check(code, live.port) == 0
        port = live.port
    assert run_check(code, port) != 0


def test_environment_matches_the_chart():
    env = {}
    for command in final().all("ENV"):
        values = list(command.value)
        env.update(zip(values[::2], values[1::2], strict=True))
    chart_env = {e["name"]: e.get("value") for e in CASES[0].container()["env"]}
    assert env["XREG_DATA_DIR"] == chart_env["XREG_DATA_DIR"]
    assert env["PATH"].startswith("/opt/xreg-gateway/bin:")


@pytest.mark.parametrize("needed", ["pyproject.toml", "requirements.lock", "README.md", "gateway", "resolvers",
                                    "adapters", "xreg", "web/copy_assets.py", "web/package.json",
                                    "web/package-lock.json", "samples"])
def test_dockerignore_keeps_what_the_build_copies(needed):
    ignored = dockerignore()
    assert needed not in ignored and needed.split("/")[0] not in ignored
    assert (ROOT / needed).exists()


def test_dockerignore_leaves_out_local_state_and_unverified_assets():
    assert {".git", ".venv", "data", "web/node_modules", "gateway/static/graphiql", "tests"} <= dockerignore()


def dockerignore() -> set[str]:
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_the_image_carries_the_documents_the_chart_seeds():
    """The chart's seed initContainer imports paths of the image: the final stage copies them there."""
    copies = {command.value[-1].rstrip("/"): command.value[0].rstrip("/") for command in final().all("COPY")
              if not any(f.startswith("--from=") for f in command.flags)}
    for path in CASES[0].values["seed"]["paths"]:
        assert path in copies, f"{path}: no COPY puts it in the image"
        assert list((ROOT / copies[path]).glob("*.xreg.json"))


def test_every_copied_path_exists():
    for stage in stages():
        for command in stage.all("COPY"):
            if any(f.startswith("--from=") for f in command.flags):
                continue
            for source in command.value[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"

