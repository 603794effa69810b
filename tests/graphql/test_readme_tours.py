"""The GraphQL of README.md's tours runs against what `make run` serves: the sample registry."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.corpus import REPO, SAMPLES
from tests.graphql.conftest import GraphQL, make_settings, open_registry, serve_asgi
from xreg.documents.normalise import normalise
from xreg.documents.reader import read_document

README = (REPO / "README.md").read_text(encoding="utf-8")


def readme_queries() -> list[str]:
    """The curl request bodies' queries, and every inline query (`{ registry … }`)."""
    bodies = [json.loads(m) for m in re.findall(r"-d '(\{.*?\})'", README, flags=re.S)]
    inline = re.findall(r"`(\{ registry .*?\})`", README)
    return [body["query"] for body in bodies if "query" in body] + inline  # not the webhook example's body


@pytest.fixture
async def samples(tmp_path: Path) -> AsyncIterator[GraphQL]:
    async with open_registry(tmp_path / "registry.db") as reg:
        for path in sorted(SAMPLES.glob("*.xreg.json")):
            await reg.apply_document(normalise(read_document(path))[0])
        async with serve_asgi(reg, make_settings(tmp_path)) as gql:
            yield gql


def test_the_tours_have_queries():
    assert len(readme_queries()) >= 2  # the front-end's curl, the analyst's search


@pytest.mark.parametrize("query", readme_queries())
async def test_a_tour_query_answers(samples: GraphQL, query: str):
    data = await samples.data(query)
    connection = next(iter(data["registry"].values()))
    assert connection["nodes"], f"the tour's query finds nothing in samples/: {query}"
