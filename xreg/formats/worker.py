"""One worker process of the evaluator (:mod:`xreg.formats.evaluator`): ``python -m
xreg.formats.worker LIMITS_JSON``.

It imports the format libraries, lowers its own limits (``RLIMIT_AS`` once, ``RLIMIT_CPU``
before each task: the CPU it has used so far plus the per-evaluation budget, so the kernel ends
it with ``SIGXCPU`` when one evaluation overruns), says it is ready, then answers one request
after another on its standard input and output: length-prefixed JSON frames, a request
``{"op", "args"}``, an answer ``{"ok": result}`` or ``{"refused": [kind, detail]}``. Every
exception an evaluation raises becomes a refusal; the process never answers with a traceback.
Nothing it reads is trusted by the service: answers are JSON, never pickles.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
import resource
import struct
import sys
from typing import IO, Any

from xreg.formats import core, documents, payloads, xml_input
from xreg.formats.model import Refused

_HEADER = struct.Struct(">I")


def read_frame(stream: IO[bytes]) -> bytes | None:
    """One frame from ``stream``; ``None`` at its end."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    size = _HEADER.unpack(head)[0]
    body = stream.read(size)
    return body if len(body) == size else None


def frame(body: bytes) -> bytes:
    """``body`` with its length prefix."""
    return _HEADER.pack(len(body)) + body


def decode_document(value: list[Any]) -> Any:
    """A document as the evaluator encoded it: ``["b", base64]`` bytes, ``["s", text]`` a string,
    ``["j", JSON text]`` any other JSON value, ``["n"]`` none."""
    kind = value[0]
    if kind == "b":
        return base64.b64decode(value[1])
    if kind == "j":
        return json.loads(value[1])
    return None if kind == "n" else value[1]


def _set_cpu_budget(seconds: int) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = math.ceil(usage.ru_utime + usage.ru_stime)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def main() -> None:
    limits = json.loads(sys.argv[1])
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a library's stray output goes to stderr, never into the answers
    requests = sys.stdin.buffer
    documents.MAX_DEPTH = xml_input.MAX_DEPTH = int(limits["max_depth"])
    memory = int(limits["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    def run(op: str, args: list[Any]) -> Any:
        if op == "validate":
            return core.validate(args[0], decode_document(args[1]))
        if op == "compatibility":
            return core.check_compatibility(args[0], args[1], decode_document(args[2]),
                                            [decode_document(d) for d in args[3]])
        if op == "payload":
            references = {uri: decode_document(d) for uri, d in args[3].items()}
            return payloads.validate_payload(args[0], decode_document(args[1]), decode_document(args[2]), references)
        raise ValueError(f"unknown operation {op!r}")

    answers.write(frame(b'{"ready":true}'))
    answers.flush()
    while (body := read_frame(requests)) is not None:
        _set_cpu_budget(int(limits["cpu_seconds"]))
        answer: dict[str, Any]
        try:
            request = json.loads(body)
            answer = {"ok": dataclasses.asdict(run(request["op"], request["args"]))}
        except Refused as e:
            answer = {"refused": [e.kind, e.detail]}
        except RecursionError:
            answer = {"refused": ["too_deep", "the evaluation nested too deep (a reference loop, or content "
                                              "nested beyond what the format's library can follow)"]}
        except MemoryError:
            answer = {"refused": ["budget", f"the evaluation needed more than its memory bound of {memory} bytes "
                                            "(XREG_EVAL_MEMORY_BYTES)"]}
        except Exception as e:  # the format library gave up on hostile content: a refusal, not a crash
            answer = {"refused": ["failed", f"the document could not be evaluated ({type(e).__name__}: "
                                            f"{str(e)[:300]})"]}
        try:
            encoded = json.dumps(answer).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError, RecursionError) as e:
            encoded = json.dumps({"refused": ["failed", f"the result could not be encoded ({e})"]}).encode()
        answers.write(frame(encoded))
        answers.flush()


if __name__ == "__main__":
    main()
