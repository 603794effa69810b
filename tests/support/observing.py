"""Reading what the gateway reports about itself: Prometheus scrapes as numbers, and every log
record of a block captured, formatted as the served gateway formats it."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import httpx
from prometheus_client.parser import text_string_to_metric_families

from gateway.logs import JsonFormatter, TextFormatter

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse_metrics(text: str) -> Samples:
    """Every sample of a text exposition, by (sample name, labels)."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def scrape(base_url: str) -> Samples:
    """``GET /metrics`` of a served gateway, parsed."""
    response = httpx.get(base_url + "/metrics", timeout=30, trust_env=False)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return parse_metrics(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value (0 when absent: a counter not yet counted)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


class Captured(logging.Handler):
    """Each record as the served gateway writes it, in both formats, plus its raw parts."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.json: list[str] = []
        self.text: list[str] = []
        self.raw: list[str] = []
        self._json, self._text = JsonFormatter(), TextFormatter("%(levelname)s %(name)s: %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.json.append(self._json.format(record))
        self.text.append(self._text.format(record))
        self.raw.append(f"{record.msg!s} {record.args!r} {getattr(record, 'fields', '')!r}")

    @property
    def everything(self) -> str:
        return "\n".join(self.json + self.text + self.raw)


@contextlib.contextmanager
def captured_logs() -> Iterator[Captured]:
    """Every log record of the process at DEBUG level, while the block runs."""
    handler = Captured()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
