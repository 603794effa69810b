"""OpenTelemetry tracing, opt-in: spans for HTTP requests, GraphQL operations, store calls and
remote registry requests, with the trace context sent on to remote registries (``traceparent``).

Off by default, and then free: OpenTelemetry is not even imported, :func:`span` hands back one
shared no-op context manager and :func:`inject` adds nothing. It is switched on by
``XREG_OTEL_ENABLED=true`` or by the standard variables (``OTEL_TRACES_EXPORTER`` other than
``none``, ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), unless
``OTEL_SDK_DISABLED=true``; see :func:`wanted`. Spans are exported with OTLP over HTTP
(``otlp``, configured by the standard ``OTEL_EXPORTER_OTLP_*`` variables) or to standard output
(``console``), batched; sampling follows ``OTEL_TRACES_SAMPLER``. The gateway keeps its own
tracer provider (it does not replace a process-wide one).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

log = logging.getLogger("xreg.tracing")

#: Instrumentation scope of the gateway's spans.
SCOPE = "xreg-gateway"
_NOOP: contextlib.nullcontext[None] = contextlib.nullcontext()

_provider: TracerProvider | None = None
_tracer: Tracer | None = None


def wanted(enabled: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Whether tracing is asked for: ``enabled`` (``XREG_OTEL_ENABLED``) or the standard
    ``OTEL_*`` variables name an exporter or an OTLP endpoint; ``OTEL_SDK_DISABLED=true`` wins."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if enabled:
        return True
    exporters = {e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",") if e.strip()}
    if exporters - {"none"}:
        return True
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def active() -> bool:
    """Whether spans are being recorded."""
    return _tracer is not None


def start(service_name: str = "xreg-gateway", exporter: SpanExporter | None = None) -> None:
    """Start recording spans (again, replacing a running set-up). ``exporter``: where spans go,
    each as it ends (tests); by default the exporters of ``OTEL_TRACES_EXPORTER``, batched."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

    global _provider, _tracer
    stop()
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    provider = TracerProvider(resource=Resource.create(attributes))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        names = [e.strip().lower() for e in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if e.strip()]
        for name in names:
            if name == "console":
                provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
            elif name == "otlp":
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

                provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            elif name != "none":
                log.warning("OTEL_TRACES_EXPORTER %r is not supported here (otlp, console); ignored", name)
    _provider, _tracer = provider, provider.get_tracer(SCOPE)
    log.info("tracing on (exporters: %s)", "given" if exporter is not None else
             os.environ.get("OTEL_TRACES_EXPORTER", "otlp"))


def stop() -> None:
    """Stop recording spans, exporting those still buffered."""
    global _provider, _tracer
    provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


def span(name: str, attributes: Mapping[str, Any] | None = None, *,
         kind: str = "internal") -> contextlib.AbstractContextManager[Any]:
    """A span around the block (the current span's child), yielding it; a no-op yielding
    ``None`` when tracing is off. ``kind``: ``internal``, ``client`` or ``server``."""
    if _tracer is None:
        return _NOOP
    from opentelemetry.trace import SpanKind

    return _tracer.start_as_current_span(name, kind=SpanKind[kind.upper()], attributes=dict(attributes or {}))


@contextlib.contextmanager
def server_span(name: str, headers: Iterable[tuple[bytes, bytes]],
                attributes: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """The span of a request served, continuing the trace its ``traceparent`` names."""
    if _tracer is None:
        yield None
        return
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers}
    with _tracer.start_as_current_span(name, context=extract(carrier), kind=SpanKind.SERVER,
                                       attributes=dict(attributes or {})) as current:
        yield current


def inject(headers: MutableMapping[str, str]) -> None:
    """Add the current trace context (``traceparent``, ``tracestate``) to outgoing ``headers``."""
    if _tracer is None:
        return
    from opentelemetry.propagate import inject as _inject

    _inject(headers)
