"""The one bounded evaluator of untrusted content: every schema validation, compatibility check
and payload validation the service runs goes through :class:`Evaluator`.

Bounds, each a setting (``XREG_EVAL_*``, docs/untrusted-content.md):

- size: a schema document over :attr:`Limits.max_document_bytes`, a payload over
  :attr:`Limits.max_payload_bytes`, or a value nested deeper than :attr:`Limits.max_depth` is
  refused before any library sees it;
- no file or network access: JSON Schema ``$ref`` resolves within the document, to the
  meta-schemas and to the registry-held schemas the caller hands in, never by retrieval
  (:func:`xreg.formats.json_schema_format.reference_registry`); XML is screened for
  entities, DTDs and depth and parsed with ``xmlschema``'s ``defuse="always"`` /
  ``allow="none"`` (:mod:`xreg.formats.xml_input`); Protobuf imports only the well-known types;
- linear-time regular expressions: JSON Schema patterns match with RE2
  (:mod:`xreg.formats.regex`); syntax RE2 lacks is refused with the reason. The patterns
  ``xmlschema`` (XSD facets) and ``json-structure`` (``pattern``) match with Python's ``re``
  have no public hook: they are bounded by the next point alone;
- waiting: at most :attr:`Limits.workers` evaluations run at once and at most
  :attr:`Limits.queue_size` more wait for a worker, each at most :attr:`Limits.queue_seconds`;
  an evaluation that finds the line full, or waits too long, is refused at once with ``busy``
  (the service answers ``server_busy``: HTTP 503 with ``Retry-After``, GraphQL
  ``extensions.code``). Nothing queues without bound, not even in the thread pool: it has a
  thread for every evaluation admitted;
- CPU, memory and time: the evaluation runs in a worker process (:mod:`xreg.formats.worker`)
  whose address space is capped (``RLIMIT_AS``), whose CPU per evaluation is capped
  (``RLIMIT_CPU``, the kernel ends it), and which the service kills and replaces when an
  evaluation passes its wall deadline. The event loop only awaits; the waiting thread sleeps in
  ``select``, without the GIL.

Nothing is evaluated in the service's process, however small: the cost of one round trip to a
worker (a fraction of a millisecond for a small document) buys one rule with no exception, and
results are cached by the request's digest (:attr:`Evaluator.results`), so a document is
evaluated once.

Why a pool of its own rather than ``concurrent.futures.ProcessPoolExecutor``: that executor
cannot end one task. A worker stuck in a catastrophic regular expression can only be stopped by
killing its process, which breaks the whole executor and every other evaluation in flight;
``max_tasks_per_child`` recycles workers but cannot interrupt one. Here each worker is a
``subprocess`` with two pipes, owned by one evaluation at a time; the deadline kills that process
only, and a fresh one takes its place on the next evaluation. Requests and answers are JSON
frames (no pickle crosses from a worker to the service).

Anything refused or cut off raises :class:`~xreg.formats.model.Refused`; callers turn it into
the spec's errors (the write path) or ``validated: false`` with the reason (``validateMessage``).
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import contextlib
import functools
import hashlib
import json
import logging
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from xreg import json_limits
from xreg.formats.documents import LRUCache
from xreg.formats.model import BreakingChange, CompatibilityResult, Refused, ValidationResult, Violation
from xreg.formats.worker import frame

log = logging.getLogger("xreg.formats.evaluator")

#: How long a new worker may take to import the format libraries and say it is ready.
STARTUP_SECONDS = 60.0
#: Evaluations one worker runs before it is replaced (bounds what its caches hold).
TASKS_PER_WORKER = 500
_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class Limits:
    """The bounds of one evaluation (docs/untrusted-content.md lists the settings behind them)."""

    max_document_bytes: int = 1 << 20
    max_payload_bytes: int = 1 << 20
    max_depth: int = json_limits.MAX_DEPTH
    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_bytes: int = 1 << 30
    workers: int = 2
    queue_size: int = 16
    queue_seconds: float = 30.0

    @property
    def retry_after(self) -> int:
        """Seconds a refused caller is told to wait: within one evaluation's wall bound a worker is free."""
        return max(1, math.ceil(self.wall_seconds))


class _CutOff(Exception):
    """The worker passed its deadline or died; ``detail`` says which."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, limits: Limits) -> None:
        # none of the service's environment (credentials, store URLs) reaches a worker
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8",
               "PYTHONPATH": os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "xreg.formats.worker", json.dumps(asdict(limits))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, close_fds=True,
            cwd=tempfile.gettempdir())
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin, self.proc.stdout.fileno()
        self.tasks = 0
        try:
            if self._read(time.monotonic() + STARTUP_SECONDS) != b'{"ready":true}':
                raise _CutOff("it did not say it was ready")
        except _CutOff:
            self.kill()
            raise

    def call(self, request: bytes, wall_seconds: float) -> bytes:
        self.tasks += 1
        try:
            self._in.write(frame(request))
            self._in.flush()
        except (BrokenPipeError, OSError) as e:
            raise _CutOff(f"the worker ended ({e})") from None
        return self._read(time.monotonic() + wall_seconds)

    def _read(self, deadline: float) -> bytes:
        head = self._read_exactly(4, deadline)
        return self._read_exactly(int.from_bytes(head, "big"), deadline)

    def _read_exactly(self, size: int, deadline: float) -> bytes:
        chunks: list[bytes] = []
        while size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._out], [], [], remaining)[0]:
                raise _CutOff("deadline")
            chunk = os.read(self._out, min(size, 1 << 20))
            if not chunk:
                raise _CutOff(self._death())
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _death(self) -> str:
        code = self.proc.wait()
        if code == -signal.SIGXCPU:
            return "cpu"
        return f"the worker ended (exit status {code})"

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(OSError):
            self._in.close()
        self.proc.wait()
        with contextlib.suppress(OSError):
            self.proc.stdout.close()  # type: ignore[union-attr]


class Evaluator:
    """A pool of :attr:`Limits.workers` worker processes, started on first use; thread-safe.

    The ``async`` methods are what the service calls; each waits on a thread of its own (the
    event loop never blocks). :meth:`close` ends the workers."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.limits.workers)
        #: Evaluations admitted (at work or waiting for a worker): at most ``workers + queue_size``.
        self.admitted = 0
        #: Evaluations refused at once because the line was full, since start.
        self.refused = 0
        self._threads = ThreadPoolExecutor(self.limits.workers + self.limits.queue_size,
                                           thread_name_prefix="xreg-evaluator")
        #: Answers per request digest (refusals that a retry could change are not kept).
        self.results: LRUCache[Any] = LRUCache(1024)
        #: Workers killed at their deadline or ended by the kernel (CPU, memory), since start.
        self.kills = 0
        self._closed = False

    # -- what the service calls -----------------------------------------------------------------
    async def validate(self, format: str, document: Any) -> ValidationResult:
        """A Version's document validated against its ``format`` (``xreg.formats.core.validate``)."""
        args = [format, self._document(document, "schema document")]
        return _validation(await self._run("validate", args))

    async def check_compatibility(self, format: str, mode: str, new_document: Any,
                                  older_documents: Sequence[Any]) -> CompatibilityResult:
        """``xreg.formats.core.check_compatibility``, bounded."""
        args = [format, mode, self._document(new_document, "schema document"),
                [self._document(d, "schema document") for d in older_documents]]
        raw = await self._run("compatibility", args)
        return CompatibilityResult(raw["mode"], raw["checked"], raw["reason"],
                                   tuple(BreakingChange(**b) for b in raw["breaking"]))

    async def validate_payload(self, format: str, schema: Any, data: Any,
                               references: Mapping[str, Any] | None = None) -> ValidationResult:
        """``xreg.formats.payloads.validate_payload``, bounded: ``references`` maps the URIs of
        registry-held schemas a JSON Schema may ``$ref`` to their documents."""
        args = [format, self._document(schema, "schema document"), self._document(data, "payload"),
                {uri: self._document(d, "referenced schema document") for uri, d in (references or {}).items()}]
        return _validation(await self._run("payload", args))

    def close(self) -> None:
        """End every idle worker (a busy one ends when its evaluation does)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()
        self._threads.shutdown(wait=False)

    # -- the bounds -----------------------------------------------------------------------------
    def _document(self, document: Any, what: str) -> list[Any]:
        """``document`` encoded for a worker, or :class:`Refused` when it is over a bound."""
        limit = self.limits.max_payload_bytes if what == "payload" else self.limits.max_document_bytes
        if document is None:
            return ["n"]
        if isinstance(document, bytes):
            size, encoded = len(document), ["b", base64.b64encode(document).decode("ascii")]
        elif isinstance(document, str):
            size, encoded = len(document.encode("utf-8", "surrogatepass")), ["s", document]
        else:
            try:
                text = json.dumps(document, ensure_ascii=False)
            except RecursionError:
                raise Refused("too_deep", f"the {what} nests deeper than {self.limits.max_depth} levels "
                                          "(XREG_EVAL_MAX_DEPTH)") from None
            except (TypeError, ValueError) as e:
                raise Refused("failed", f"the {what} is not a JSON value ({e})") from None
            size, encoded = len(text.encode("utf-8", "surrogatepass")), ["j", text]
            if size <= limit:
                try:
                    json_limits.check(document, max_depth=self.limits.max_depth)
                except json_limits.JSONLimitError as e:
                    raise Refused("too_deep", f"the {what} is {e.detail} (XREG_EVAL_MAX_DEPTH)") from None
        if size > limit:
            setting = "XREG_EVAL_MAX_PAYLOAD_BYTES" if what == "payload" else "XREG_EVAL_MAX_DOCUMENT_BYTES"
            raise Refused("too_large", f"the {what} is {size} bytes, over the limit of {limit} bytes ({setting})")
        return encoded

    async def _run(self, op: str, args: list[Any]) -> Any:
        self._admit()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, functools.partial(self._admitted_run, op, args))

    def _admit(self) -> None:
        """Count one more evaluation in, or refuse it (``busy``) when the line is full."""
        with self._lock:
            if self.admitted >= self.limits.workers + self.limits.queue_size:
                self.refused += 1
                full = True
            else:
                self.admitted += 1
                full = False
        if full:
            raise Refused("busy", f"every evaluator worker is at work and {self.limits.queue_size} evaluations "
                                  "wait already (XREG_EVAL_WORKERS, XREG_EVAL_QUEUE_SIZE); try again",
                          self.limits.retry_after)

    def _admitted_run(self, op: str, args: list[Any]) -> Any:
        """:meth:`run` for an evaluation :meth:`_admit` counted in (out again when it ends, on its
        thread: a caller that stops waiting does not free the place of work still going on)."""
        try:
            return self.run(op, args)
        finally:
            with self._lock:
                self.admitted -= 1

    def run(self, op: str, args: list[Any]) -> Any:
        """One evaluation on a worker, blocking the calling thread (never the event loop's):
        the worker's answer, or :class:`Refused`."""
        request = json.dumps({"op": op, "args": args}, ensure_ascii=False).encode("utf-8", "surrogatepass")
        key = hashlib.sha256(request).hexdigest()
        answer = self.results.get_or_compute(key, lambda: self._evaluate(request))
        if "refused" in answer:
            raise Refused(*answer["refused"])
        return answer["ok"]

    def _evaluate(self, request: bytes) -> dict[str, Any]:
        if not self._slots.acquire(timeout=self.limits.queue_seconds):
            raise Refused("busy", f"every evaluator worker stayed at work for {self.limits.queue_seconds} s "
                                  "(XREG_EVAL_WORKERS, XREG_EVAL_QUEUE_SECONDS); try again", self.limits.retry_after)
        try:
            worker = self._take()
            try:
                raw = worker.call(request, self.limits.wall_seconds)
            except _CutOff as e:
                worker.kill()
                self.kills += 1
                raise self._cut_off(e.detail) from None
            try:
                answer: dict[str, Any] = json.loads(raw)
            except ValueError:
                worker.kill()
                raise Refused("failed", "the evaluator worker answered something that is not JSON") from None
            with self._lock:
                keep = not self._closed and worker.tasks < TASKS_PER_WORKER
                if keep:
                    self._idle.append(worker)
            if not keep:
                worker.kill()
            return answer
        finally:
            self._slots.release()

    def _take(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        try:
            return _Worker(self.limits)
        except (_CutOff, OSError) as e:
            log.error("an evaluator worker did not start: %s", e)
            raise Refused("busy", "no evaluator worker could be started; try again", self.limits.retry_after) from None

    def _cut_off(self, detail: str) -> Refused:
        if detail == "deadline":
            return Refused("budget", f"the evaluation was cut off after {self.limits.wall_seconds} s "
                                     "(XREG_EVAL_WALL_SECONDS)")
        if detail == "cpu":
            return Refused("budget", f"the evaluation was cut off after {self.limits.cpu_seconds} s of CPU "
                                     "(XREG_EVAL_CPU_SECONDS)")
        return Refused("budget", f"the evaluation was cut off: {detail} (a memory bound, XREG_EVAL_MEMORY_BYTES, "
                                 "or a crash of the format's library)")


def _validation(raw: dict[str, Any]) -> ValidationResult:
    return ValidationResult(raw["validated"], raw["reason"], tuple(Violation(**v) for v in raw["violations"]),
                            tuple(Violation(**w) for w in raw["warnings"]))


_default: Evaluator | None = None
_default_lock = threading.Lock()


@atexit.register
def _close_default() -> None:
    if _default is not None:
        _default.close()


def default() -> Evaluator:
    """The process's evaluator (created with the default :class:`Limits` on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Evaluator()
        return _default


def configure(limits: Limits) -> Evaluator:
    """Make the process's evaluator one with ``limits`` (the application does, from its settings);
    the previous one's idle workers end."""
    global _default
    with _default_lock:
        if _default is not None and _default.limits == limits:
            return _default
        previous, _default = _default, Evaluator(limits)
        current = _default
    if previous is not None:
        previous.close()
    return current
