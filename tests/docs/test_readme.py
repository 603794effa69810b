"""README.md stays the front page: at most 200 lines, the two commands exactly as CI runs them
(`.ci/run` runs README's test command), a tour for each kind of user, the manual one link away."""

from __future__ import annotations

import re

from tests.corpus import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_at_most_200_lines():
    assert len(README.splitlines()) <= 200


def test_the_two_commands():
    block = README.split("## The two commands", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make run", "make test"]
    assert "make test" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^test: ", (REPO / "Makefile").read_text(encoding="utf-8"), flags=re.M)


def test_a_tour_for_each_kind_of_user():
    tours = re.findall(r"^### (.+)$", README.split("## Five minutes with it", 1)[1].split("\n## ", 1)[0], flags=re.M)
    assert len(tours) == 4
    for who in ("front-end", "analyst", "Spark", "operator"):
        assert any(who in tour for tour in tours), who
