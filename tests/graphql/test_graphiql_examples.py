"""GraphiQL's example queries (gateway/graphiql_examples.py) against the 117-feed corpus: each is
a valid query, answers data and no error, and is what the page offers."""

from __future__ import annotations

import json
import re
from typing import Any

import graphql
import pytest

from gateway.graphiql import render_page
from gateway.graphiql_examples import EXAMPLES, Example
from xreg.config import Settings


def holds_data(value: Any) -> bool:
    """Some list with an item, or some positive count, anywhere in ``value``."""
    if isinstance(value, list):
        return bool(value)
    if isinstance(value, dict):
        return any(holds_data(v) or (k == "totalCount" and v > 0) for k, v in value.items())
    return False


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
async def test_every_example_answers_data_on_the_corpus(corpus, example: Example):
    body = await corpus(example.query, **example.variables)
    assert "errors" not in body, body["errors"]
    assert holds_data(body["data"]), body["data"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_each_example_is_one_named_operation_with_its_variables(example: Example):
    (operation,) = graphql.parse(example.query).definitions
    assert isinstance(operation, graphql.OperationDefinitionNode)
    assert operation.name is not None and operation.name.value == example.name  # GraphiQL's tab title
    declared = {v.variable.name.value for v in operation.variable_definitions or ()}
    assert declared == set(example.variables)
    assert json.loads(example.variables_json() or "{}") == example.variables


def test_the_page_offers_every_example(tmp_path):
    page = render_page(Settings(data_dir=tmp_path, store_url="", config=None), {})
    match = re.search(r'<script type="application/json" id="graphiql-config">(.*?)</script>', page, re.S)
    assert match
    offered = json.loads(match.group(1))["examples"]
    assert [(e["name"], e["query"], e["variables"]) for e in offered] == \
        [(e.name, e.query, e.variables_json()) for e in EXAMPLES]
    assert len({e.name for e in EXAMPLES}) == len(EXAMPLES)
