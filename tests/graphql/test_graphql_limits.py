"""Safety: depth, alias and token limits before execution; introspection switch; masking; size."""

from __future__ import annotations

from pathlib import Path

from graphql import get_introspection_query

from resolvers.limits import check_document, parse_document
from tests.graphql.conftest import make_settings, open_registry, serve_asgi

DEEP = "{ registry { " + "endpoints { nodes { messagegroups { " * 4 + "xid" + " } } }" * 4 + " } }"


def client_with(tmp_path: Path, **settings):
    """A registry (to open with ``async with``) and the app over it with these settings."""
    registry = open_registry(tmp_path / f"registry-{len(list(tmp_path.iterdir()))}.db")
    return registry, serve_asgi(registry, make_settings(tmp_path, **settings))


async def test_depth_bomb_is_refused_before_execution(corpus):
    corpus.registry.store.stats.calls.clear()
    body = await corpus(DEEP)
    assert "data" not in body
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "QUERY_TOO_DEEP" and "limit is 12" in error["message"]
    assert corpus.registry.store.stats.total == 0


async def test_depth_counts_through_fragments(corpus):
    query = ("query Q { registry { ...R } } fragment R on Registry { endpoints { ...E } } "
             "fragment E on EndpointConnection { nodes { messagegroups { messages { nodes { group { ... on "
             "MessageGroup { messages { nodes { group { ... on MessageGroup { messages { nodes { xid } } } } } } } } } } } } }")
    error = await corpus.error(query)
    assert error["extensions"]["code"] == "QUERY_TOO_DEEP" and error["message"].startswith('"Q" is 13 levels deep')


async def test_alias_bomb_through_fragment_spreads_is_refused(corpus):
    fields = " ".join(f"a{i}: xid" for i in range(10))
    spreads = " ".join(f"s{i}: registry {{ ...F }}" for i in range(4))
    corpus.registry.store.stats.calls.clear()
    error = await corpus.error(f"query {{ {spreads} }} fragment F on Registry {{ {fields} }}")
    assert error["extensions"]["code"] == "TOO_MANY_ALIASES" and "44 aliases" in error["message"]
    assert corpus.registry.store.stats.total == 0
    ok = await corpus.data("{ a: registry { x: xid } b: registry { y: xid } }")
    assert ok == {"a": {"x": "/"}, "b": {"y": "/"}}


async def test_token_limit(corpus):
    error = await corpus.error("{ registry { " + "xid " * 5000 + "} }")
    assert error["extensions"]["code"] == "TOO_MANY_TOKENS" and "4000 tokens" in error["message"]


async def test_introspection_allowed_by_default_and_graphiql_query_fits_the_limits(corpus):
    data = await corpus.data(get_introspection_query(descriptions=True, input_value_deprecation=True))
    assert any(t["name"] == "Message" for t in data["__schema"]["types"])


async def test_introspection_can_be_switched_off(tmp_path):
    registry, app = client_with(tmp_path, graphql_introspection=False)
    async with registry, app as gql:
        error = await gql.error("{ __schema { types { name } } }")
        assert error["extensions"]["code"] == "INTROSPECTION_DISABLED"
        assert (await gql.data("{ registry { __typename } }")) == {"registry": {"__typename": "Registry"}}
        typo = await gql.error("{ registry { endpoint { totalCount } } }")
        assert typo["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" and "Did you mean" not in typo["message"]


async def test_internal_errors_are_masked_unless_debugging(tmp_path):
    for debug in (False, True):
        registry, app = client_with(tmp_path, debug=debug)
        async with registry, app as gql:
            await registry.close()  # the store fails underneath the resolvers
            error = await gql.error("{ registry { endpoints { totalCount } } }")
        assert error["extensions"] == {"code": "INTERNAL_SERVER_ERROR"}
        assert ("not open" in error["message"]) == debug
        assert error["message"].startswith("Internal server error.")


async def test_request_size_limit(tmp_path):
    registry, app = client_with(tmp_path, max_body_bytes=2048)
    async with registry, app as gql:
        response = await gql.post("{ registry { xid } }" + " " * 4096)
        assert response.status_code == 413
        assert response.json()["errors"][0]["extensions"]["code"] == "REQUEST_TOO_LARGE"
        registry.store.stats.calls.clear()
        assert (await gql.data("{ registry { xid } }")) == {"registry": {"xid": "/"}}


async def test_parse_and_validation_are_cached(corpus):
    query = "{ registry { endpoints(first: 1) { nodes { xid } } } }"
    await corpus.data(query)
    parsed, checked = parse_document.cache_info().hits, check_document.cache_info().hits
    await corpus.data(query)
    assert parse_document.cache_info().hits == parsed + 1
    assert check_document.cache_info().hits == checked + 1


async def test_syntax_and_validation_errors_have_codes(corpus):
    assert (await corpus.error("{ registry { "))["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    error = await corpus.error("{ registry { nope } }")
    assert error["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" and error["locations"]
