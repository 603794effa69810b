"""The committed SDL (schema.graphql) is the schema the code builds."""

from __future__ import annotations

from resolvers.schema import build_schema, sdl
from tests.corpus import REPO


def test_committed_sdl_matches_the_code():
    committed = (REPO / "schema.graphql").read_text(encoding="utf-8")
    assert committed == sdl(), "schema.graphql is stale: run `python -m resolvers > schema.graphql`"


def test_limits_do_not_change_the_sdl(tmp_path):
    from tests.graphql.conftest import make_settings

    assert build_schema(make_settings(tmp_path, graphql_introspection=False)).as_str() + "\n" == sdl()
