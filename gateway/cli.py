"""``xreg-gateway``: the command line of the gateway (``serve``, ``import``, ``export``, ``check``,
``backup``, ``restore``)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gateway.logs import logging_config, redact_url
from xreg.config import Settings, load_settings
from xreg.errors import ValidationErrors, XRegistryError
from xreg.metrics import MULTIPROC_ENV
from xreg.registry.service import LocalRegistry
from xreg.registry.stored_values import find_invalid, repair_timestamps
from xreg.storage import create_store
from xreg.storage.backup import BackupError, BackupInfo, ReadLimits, backup, check_backup, restore
from xreg.storage.base import Store
from xreg.storage.errors import HistoryChanged
from xreg.storage.sqlite import SQLiteStore
from xreg.xid import Xid

app = typer.Typer(help="xRegistry GraphQL gateway.", no_args_is_help=True, add_completion=False)
err = Console(stderr=True)


def _settings(config: Path | None) -> Settings:
    try:
        return load_settings(config=config)
    except Exception as exc:
        err.print(f"[red]invalid settings:[/red] {exc}")
        raise typer.Exit(2) from exc


ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="YAML settings file (or XREG_CONFIG).")]


class OutputFormat(StrEnum):
    """How a command prints its result: for people (a table) or for programs (one JSON document)."""

    text = "text"
    json = "json"


FormatOption = Annotated[OutputFormat, typer.Option(
    "--format", help="text (a table for people) or json (one JSON document on stdout, for programs).")]

#: Most violations of one rejected file an import lists; the rest are counted ("and N more").
MAX_VIOLATIONS = 1000


def _stdout() -> Console:
    """The console of a command's result: as wide as the terminal, or, when stdout is not one (a
    pipe, a file, a CI log), wide enough that no XID or path is cut."""
    out = Console()
    return out if out.is_terminal else Console(width=100_000)


def _emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def _violation_line(exc: XRegistryError) -> str:
    where = f" at {exc.subject}" if exc.subject and exc.subject != "/" else ""
    return f"{exc.type}{where}: {exc.title}"


@dataclass
class Violations:
    """Why a file was rejected: its first :data:`MAX_VIOLATIONS` violations, and how many more."""

    listed: list[XRegistryError]
    more: int = 0

    @classmethod
    def of(cls, exc: XRegistryError) -> Violations:
        every = exc.errors if isinstance(exc, ValidationErrors) else [exc]
        return cls(every[:MAX_VIOLATIONS], max(0, len(every) - MAX_VIOLATIONS))

    @property
    def count(self) -> int:
        return len(self.listed) + self.more


@dataclass
class ImportReport:
    """What an import did, file by file."""

    #: ``(file, outcome counts, reason)``; the reason (a rejected file's first violation) is empty
    #: for a file that went in.
    rows: list[tuple[str, dict[str, int], str]] = field(default_factory=list)
    #: Every violation of each rejected file (bounded, see :class:`Violations`), by file.
    violations: dict[str, Violations] = field(default_factory=dict)
    rules: Counter = field(default_factory=Counter)
    changes: list[str] = field(default_factory=list)
    #: Messages whose base message is not in the registry (permitted; they stay as declared).
    dangling: list[str] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return sum(1 for _, _, reason in self.rows if reason)


async def run_import(settings: Settings, paths: list[Path], *, strict: bool, validate: bool = True,
                     console: Console | None = None) -> ImportReport:
    """Import documents into the local registry, each file all-or-nothing."""
    from xreg.documents.normalise import normalise
    from xreg.documents.reader import find_documents, read_document

    report = ImportReport()
    files = find_documents(paths)
    registry = LocalRegistry.from_settings(settings)
    await registry.open()
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console or err, transient=True, disable=console is None and not err.is_terminal) as bar:
            task = bar.add_task("importing", total=len(files))
            for path in files:
                bar.update(task, description=f"importing {path.name}")
                try:
                    doc = read_document(path)
                    normalised, notes = normalise(doc, strict=strict)
                    note = f"import {path.name}" + ("" if validate else " (schema validation switched off)")
                    outcome = await registry.apply_document(normalised, note=note, validate=validate)
                except XRegistryError as exc:
                    found = Violations.of(exc)
                    report.rows.append((str(path), {}, _violation_line(found.listed[0])))
                    report.violations[str(path)] = found
                else:
                    counts = _kind_counts(registry, outcome)
                    report.rows.append((str(path), counts, ""))
                    report.dangling += [f"{path.name}: {xid}: basemessageuri {ref} is not in the registry"
                                        for xid, ref in outcome.dangling]
                    for n in notes:
                        report.rules[n.rule] += 1
                        report.changes.append(f"{path.name}: {n.path}: {n.rule}: {n.detail}")
                bar.advance(task)
    finally:
        await registry.close()
    return report


def _kind_counts(registry, outcome) -> dict[str, int]:
    """Outcome counts of groups and resources (versions of single-version resources folded in)."""
    counts = {k: 0 for k in ("created", "updated", "unchanged")}
    for what in counts:
        for xid in getattr(outcome, what):
            level = Xid.parse(xid).level
            if level in ("group", "resource") or (level == "version" and _versioned(registry, xid)):
                counts[what] += 1
    return counts


def _versioned(registry, xid: str) -> bool:
    gtype, _, rtype, *_ = Xid.parse(xid).parts
    rdef = registry.model.resource(gtype, rtype)
    return bool(rdef and rdef.maxversions != 1)


@app.command("import")
def import_cmd(
    paths: Annotated[list[Path], typer.Argument(help="xRegistry documents or directories of them.", exists=True)],
    strict: Annotated[bool, typer.Option("--strict", help="Reject older shapes instead of normalising them.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List every normalisation.")] = False,
    no_validate: Annotated[bool, typer.Option(
        "--no-validate", help="Do not check schema documents against their format and compatibility rule (for "
                              "migrating legacy data); each version records that it was not validated.")] = False,
    config: ConfigOption = None,
    output: FormatOption = OutputFormat.text,
) -> None:
    """Load xRegistry documents (JSON or YAML) into the local registry, each file all-or-nothing. A
    rejected file is reported with every violation found in it (up to 1,000)."""
    settings = _settings(config)
    report = asyncio.run(run_import(settings, paths, strict=strict, validate=not no_validate, console=err))
    if output is OutputFormat.json:
        _emit_json(_import_json(report))
    else:
        _print_import(report, verbose=verbose)
    if report.rejected:
        err.print(f"[red]{report.rejected} of {len(report.rows)} file(s) rejected; "
                  "nothing was written from them.[/red]")
        raise typer.Exit(1)


def _import_json(report: ImportReport) -> dict[str, Any]:
    """The import's result for programs: per file its outcome counts or every violation (the
    problem documents of the HTTP binding), and the normalisations and dangling references."""
    files = []
    for path, counts, reason in report.rows:
        entry: dict[str, Any] = {"file": path, "rejected": bool(reason), **counts}
        if reason:
            found = report.violations[path]
            entry |= {"violations": [e.to_problem() for e in found.listed], "more_violations": found.more}
        files.append(entry)
    return {"files": files, "normalised": dict(sorted(report.rules.items())), "changes": report.changes,
            "dangling": report.dangling}


def _print_import(report: ImportReport, *, verbose: bool) -> None:
    out = _stdout()
    table = Table(title="import summary")
    for col in ("file", "created", "updated", "unchanged", "rejected"):
        table.add_column(col, justify="left" if col in ("file", "rejected") else "right")
    for path, counts, reason in report.rows:
        cells = [str(counts.get(k, 0)) if not reason else "-" for k in ("created", "updated", "unchanged")]
        found = report.violations.get(path)
        table.add_row(escape(Path(path).name), *cells, f"{found.count} violation(s)" if found else "")
    out.print(table)
    for path, found in report.violations.items():
        out.print(f"{path}: rejected, {found.count} violation(s):", markup=False, highlight=False, soft_wrap=True)
        for exc in found.listed:
            out.print("  " + _violation_line(exc), markup=False, highlight=False, soft_wrap=True)
        if found.more:
            out.print(f"  and {found.more} more", markup=False, highlight=False)
    if report.rules:
        out.print("normalised: " + ", ".join(f"{rule} x{n}" for rule, n in sorted(report.rules.items())))
        if verbose:
            for line in report.changes:
                out.print("  " + line, markup=False, highlight=False, soft_wrap=True)
    if report.dangling:
        out.print(f"{len(report.dangling)} message(s) name a base message that is not in the registry; they show "
                  "what they declare until it is imported" + ("" if verbose else " (--verbose lists them)"))
        if verbose:
            for line in report.dangling:
                out.print("  " + line, markup=False, highlight=False, soft_wrap=True)


@app.command("export")
def export_cmd(
    output: Annotated[Path | None, typer.Option("--output", "-o",
                                                help="File to write (default: standard output).")] = None,
    as_of: Annotated[int | None, typer.Option("--as-of", help="Export the registry as of this revision.")] = None,
    materialised: Annotated[bool, typer.Option(
        "--materialised", help="Each message as it really is (its basemessageuri chain merged) instead of what it "
                               "declares; such a document is for reading, not for importing back.")] = False,
    config: ConfigOption = None,
) -> None:
    """Write the local registry as one xRegistry 1.0-rc4 document (what each entity declares)."""
    settings = _settings(config)

    async def run() -> dict:
        registry = LocalRegistry.from_settings(settings)
        await registry.open()
        try:
            return await registry.export_document(as_of=as_of, materialised=materialised)
        finally:
            await registry.close()

    try:
        doc = asyncio.run(run())
    except XRegistryError as exc:
        err.print(f"[red]{exc.type}:[/red] {exc.title}")
        raise typer.Exit(1) from exc
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    if output:
        output.write_text(text + "\n", encoding="utf-8")
        err.print(f"wrote {output}")
    else:
        sys.stdout.write(text + "\n")


@app.command("check")
def check_cmd(
    repair: Annotated[bool, typer.Option(
        "--repair", help="Repair invalid createdat / modifiedat values through the write path (each entity in one "
                         "write; a bad createdat becomes the entity's modifiedat when valid, else now).")] = False,
    config: ConfigOption = None,
    output: FormatOption = OutputFormat.text,
) -> None:
    """List the stored values the write path now refuses (an older gateway may have stored them); exit
    status 1 while any is left. With --repair, invalid timestamps are repaired first."""
    settings = _settings(config)

    async def run() -> tuple[list, list]:
        registry = LocalRegistry.from_settings(settings)
        await registry.open()
        try:
            repairs = await repair_timestamps(registry) if repair else []
            return repairs, await find_invalid(registry)
        finally:
            await registry.close()

    repairs, findings = asyncio.run(run())
    if output is OutputFormat.json:
        _emit_json({"repairs": [{"xid": d.xid, "values": d.values, "refused": d.refused} for d in repairs],
                    "invalid": [{"xid": f.xid, "attribute": f.path, "problem": f.detail, "repairable": f.repairable}
                                for f in findings]})
        if findings:
            raise typer.Exit(1)
        return
    out = _stdout()
    for done in repairs:
        values = ", ".join(f"{k}={v}" for k, v in done.values.items())
        line = f"not repaired {done.xid}: {done.refused}" if done.refused else f"repaired {done.xid}: {values}"
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    if not findings:
        out.print("no invalid stored values", markup=False, highlight=False)
        return
    table = Table(title="invalid stored values")
    for col in ("entity", "attribute", "problem", "--repair"):
        table.add_column(col)
    for f in findings:
        table.add_row(escape(f.xid), escape(f.path), escape(f.detail), "repairs" if f.repairable else "-")
    out.print(table)
    raise typer.Exit(1)


def _store(settings: Settings) -> Store:
    try:
        return create_store(settings.effective_store_url)
    except ValueError as exc:
        err.print(f"[red]invalid settings:[/red] {exc}")
        raise typer.Exit(2) from exc


def _summary(verb: str, info: BackupInfo, where: str) -> str:
    pending = f", {info.rematerialise} pending re-materialisations" if info.rematerialise else ""
    return (f"{verb} revision {info.revision} of registry instance {info.instance_id} ({info.revisions} commits, "
            f"{info.states} states, {info.events} events{pending}, history from revision {info.oldest}) {where}")


@app.command("backup")
def backup_cmd(
    output: Annotated[Path, typer.Option("--output", "-o",
                                         help="File to write (gzip-compressed when it ends in .gz).")],
    config: ConfigOption = None,
) -> None:
    """Write a backup of the local registry that keeps its history: every revision, state and deletion,
    and the registry's instance id. Restore it with `restore`; unlike `export`, a restored registry continues
    its revisions and its change-feed checkpoints stay valid."""
    settings = _settings(config)
    store = _store(settings)
    if isinstance(store, SQLiteStore) and isinstance(store.path, Path) and not store.path.exists():
        err.print(f"[red]no registry to back up:[/red] {escape(str(store.path))} does not exist", soft_wrap=True)
        raise typer.Exit(1)

    async def run() -> BackupInfo:
        async with store:
            return await backup(store, output)

    try:
        info = asyncio.run(run())
    except (OSError, HistoryChanged) as exc:
        err.print(f"[red]backup failed:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from exc
    err.print(_summary("backed up", info, f"to {output}"), markup=False, highlight=False, soft_wrap=True)


@app.command("restore")
def restore_cmd(
    file: Annotated[Path, typer.Argument(help="A backup written by `backup` (plain or gzip).", exists=True,
                                         dir_okay=False)],
    check: Annotated[bool, typer.Option("--check", help="Only check the backup; write nothing.")] = False,
    config: ConfigOption = None,
) -> None:
    """Load a backup into the configured store, which must be empty (a fresh data directory or database).
    The registry keeps its instance id and revisions: the next write continues the sequence. A defective
    backup is refused and nothing is written."""
    settings = _settings(config)
    limits = ReadLimits(max_line_bytes=settings.restore_max_line_bytes, max_bytes=settings.restore_max_bytes,
                        max_rematerialise=settings.restore_max_rematerialise)
    if check:
        try:
            info = check_backup(file, limits)
        except BackupError as exc:
            err.print(f"[red]invalid backup:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from exc
        err.print(_summary("valid backup:", info, f"in {file}"), markup=False, highlight=False, soft_wrap=True)
        return
    store = _store(settings)

    async def run() -> BackupInfo:
        async with store:
            return await restore(store, file, limits)

    try:
        info = asyncio.run(run())
    except BackupError as exc:
        err.print(f"[red]restore refused:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from exc
    err.print(_summary("restored", info, f"into {redact_url(settings.effective_store_url)}"), markup=False,
              highlight=False, soft_wrap=True)


@app.command("hash-key")
def hash_key_cmd(
    generate: Annotated[bool, typer.Option("--generate", help="Generate a key; print it once, with its hash.")] = False,
) -> None:
    """Print the SHA-256 of an API key read from standard input, for the api_keys setting."""
    import secrets

    from gateway.auth import hash_key

    if generate:
        key = secrets.token_urlsafe(32)
        sys.stdout.write(f"key: {key}\nsha256: {hash_key(key)}\n")
        err.print("Store the key now: it is not kept anywhere; configure only its sha256.")
        return
    key = typer.prompt("API key", hide_input=True, err=True) if sys.stdin.isatty() else sys.stdin.read()
    key = key.strip()
    if not key:
        err.print("[red]no key on standard input[/red] (or use --generate)")
        raise typer.Exit(2)
    sys.stdout.write(hash_key(key) + "\n")


@app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    workers: Annotated[int, typer.Option(
        min=1, help="Worker processes (about one per CPU core); metrics are then gathered across them.")] = 1,
    config: ConfigOption = None,
) -> None:
    """Serve the gateway: GraphQL at /graphql, GraphiQL at /graphiql, the xRegistry HTTP API under /registry.

    SIGTERM stops accepting connections, lets requests in flight finish (for at most
    XREG_SHUTDOWN_GRACE_SECONDS), closes the store and the clients, and exits with status 0."""
    import uvicorn

    from gateway.app import create_app
    from gateway.forwarded import proxy_options
    from gateway.request_limits import server_options

    settings = served_settings(_settings(config), host, port)
    options: dict[str, Any] = dict(
        host=host, port=port, log_config=logging_config(settings.log_level, settings.log_format),
        log_level=settings.log_level, access_log=False, timeout_graceful_shutdown=settings.shutdown_grace_seconds,
        **server_options(settings),  # request-head limits are the gateway's (gateway/request_limits.py)
        **proxy_options(settings),  # so is whose forwarded headers are believed (gateway/forwarded.py)
        # WebSocket frames uncompressed: a subscription's frames are small and alike for every
        # subscriber, and permessage-deflate compresses each one again per connection
        ws_per_message_deflate=False,
        # uvicorn's sans-I/O protocol on websockets: a third less CPU per frame sent than its
        # legacy "websockets" one (bench/bench_events.py)
        ws="websockets-sansio")
    # uvicorn re-raises the SIGTERM it handled once it has shut down: end normally then
    signal.signal(signal.SIGTERM, _exit_normally)
    if workers == 1:
        uvicorn.run(create_app(settings), **options)
        return
    # a worker answers the supervisor from a thread of its own once its interpreter has loaded
    # the gateway (seconds on a busy machine); one silent for this long is replaced
    options["timeout_worker_healthcheck"] = WORKER_HEALTHCHECK_SECONDS
    # Workers build the app themselves (a fresh interpreter each) from the environment.
    if config is not None:
        os.environ["XREG_CONFIG"] = str(config)
    os.environ["XREG_BASE_URL"] = settings.base_url
    made_dir = None
    if not os.environ.get(MULTIPROC_ENV):
        made_dir = tempfile.mkdtemp(prefix="xreg-metrics-")
        os.environ[MULTIPROC_ENV] = made_dir
    try:
        uvicorn.run("gateway.app:create_app", factory=True, workers=workers, **options)
    finally:
        if made_dir is not None:
            shutil.rmtree(made_dir, ignore_errors=True)


#: Seconds a worker process may leave the supervisor's health check unanswered (``--workers``).
WORKER_HEALTHCHECK_SECONDS = 30


def _exit_normally(signum: int, frame: object) -> None:
    raise SystemExit(0)


def served_settings(settings: Settings, host: str, port: int) -> Settings:
    """``settings`` with ``self`` URLs pointing at where ``serve`` listens, unless the public
    base URL was configured (``XREG_BASE_URL``, e.g. behind a proxy)."""
    if "base_url" in settings.model_fields_set:
        return settings
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    shown = f"[{shown}]" if ":" in shown else shown
    return settings.model_copy(update={"base_url": f"http://{shown}:{port}{settings.registry_prefix}"})


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
