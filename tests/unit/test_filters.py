"""The xRegistry filter / sort grammar and the reference filter semantics."""

from __future__ import annotations

import pytest

from xreg.errors import XRegistryError
from xreg.registry.filters import FilterExpression, Filters, Term, format_path, parse_filter, parse_filters, parse_sort
from xreg.storage.semantics import Condition, Sort, compare_key, matches, numeric_value, resolve, wildcard_parts

TREE = {
    "messagegroups": {"messages": {"versions": {}}},
    "schemagroups": {"schemas": {"versions": {}}},
}


def one(expr: str, **kw) -> Condition:
    terms = parse_filter(expr, **kw).terms
    assert len(terms) == 1 and terms[0].collections == ()
    return terms[0].condition


# -- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr, op, value",
    [
        ("name=x", "eq", "x"),
        ("name!=x", "ne", "x"),
        ("name<>x", "ne", "x"),
        ("epoch<2", "lt", "2"),
        ("epoch<=2", "le", "2"),
        ("epoch>2", "gt", "2"),
        ("epoch>=2", "ge", "2"),
        ("name=", "eq", ""),
        ("name=a=b<c", "eq", "a=b<c"),
        ("name=!x", "eq", "!x"),
    ],
)
def test_operators(expr, op, value):
    assert one(expr) == Condition(("name",) if expr.startswith("name") else ("epoch",), op, value)


@pytest.mark.parametrize(
    "expr, op",
    [("name", "exists"), ("name=null", "null"), ("name!=null", "exists"), ("name<>null", "exists"),
     ("name=*", "exists"), ("name=**", "exists"), ("name!=*", "null")],
)
def test_presence_and_null(expr, op):
    assert one(expr) == Condition(("name",), op)


def test_wildcards_and_escapes():
    assert one("d=*cool*") == Condition(("d",), "eq", "*cool*", wildcard=True)
    assert one("d<>a*") == Condition(("d",), "ne", "a*", wildcard=True)
    assert one(r"d=a\*b*") == Condition(("d",), "eq", r"a\*b*", wildcard=True)
    assert one(r"d=a\*b") == Condition(("d",), "eq", "a*b")  # no wildcard left: unescaped
    assert one(r"d>a\*") == Condition(("d",), "gt", "a*")
    assert one(r"d=a\b") == Condition(("d",), "eq", r"a\b")  # only \* is an escape
    assert wildcard_parts(r"*a\*b*c") == ["", "a*b", "c"]


def test_paths():
    assert one("labels.team=x").path == ("labels", "team")
    assert one("labels['my.key']=x").path == ("labels", "my.key")
    assert one('labels["a=b,c"]=x').path == ("labels", "a=b,c")
    assert one(r"labels['it\'s']").path == ("labels", "it's")
    assert one("['2']").path == ("2",)
    assert one("info.reviewers[*]=joe").path == ("info", "reviewers", "[*]")
    assert one("info.addresses.*.state=CA").path == ("info", "addresses", "*", "state")
    assert one("stack[03].x[1]").path == ("stack", "[3]", "x", "[1]")
    assert one("meta.defaultversionid=v1").path == ("meta", "defaultversionid")
    assert one("a:b-c_d=1").path == ("a:b-c_d",)


def test_and_composition():
    fe = parse_filter("name=a,epoch>1,labels.x")
    assert [t.condition.op for t in fe.terms] == ["eq", "gt", "exists"]
    assert fe.conditions == (
        Condition(("name",), "eq", "a"),
        Condition(("epoch",), "gt", "1"),
        Condition(("labels", "x"), "exists"),
    )


def test_or_composition():
    f = parse_filters(["name=a,epoch=1", "name=b"])
    assert f.any_of == (
        (Condition(("name",), "eq", "a"), Condition(("epoch",), "eq", "1")),
        (Condition(("name",), "eq", "b"),),
    )
    assert parse_filters([]).any_of == ()


def test_nested_collections():
    fe = parse_filter("messagegroups.messages.protocol=KAFKA,name=x,messagegroups.labels.a", collections=TREE)
    assert fe.terms == (
        Term(("messagegroups", "messages"), Condition(("protocol",), "eq", "KAFKA")),
        Term((), Condition(("name",), "eq", "x")),
        Term(("messagegroups",), Condition(("labels", "a"), "exists")),
    )
    assert fe.conditions == (Condition(("name",), "eq", "x"),) and fe.nested
    # "messages" is only a collection below "messagegroups"; a callable works too.
    assert parse_filter("messages.x=1", collections=TREE).terms[0].collections == ()
    by_name = parse_filter("messages.x=1", collections=lambda prefix, name: name == "messages")
    assert by_name.terms[0].collections == ("messages",)
    # Versions of messages; "meta" is an attribute of the resource, not a collection.
    assert parse_filter("messagegroups.messages.versions.versionid=1.0", collections=TREE).terms[0] == Term(
        ("messagegroups", "messages", "versions"), Condition(("versionid",), "eq", "1.0")
    )
    assert parse_filter("messagegroups.messages.meta.readonly=true", collections=TREE).terms[0] == Term(
        ("messagegroups", "messages"), Condition(("meta", "readonly"), "eq", "true")
    )


def test_descend_and_render():
    f = parse_filters(
        ["messagegroups.messagegroupid=g1,messagegroups.messages.messageid=r1", "schemagroups.x=1"],
        collections=TREE,
    )
    mg = f.descend("messagegroups")
    assert mg.params == ["messagegroupid=g1,messages.messageid=r1"]
    assert mg.any_of == ((Condition(("messagegroupid",), "eq", "g1"),),)
    assert mg.descend("messages").params == ["messageid=r1"]
    assert f.descend("endpoints").exclude_all and f.descend("endpoints").params == ["excludeall"]
    # A branch without nested terms lets every child of a matching entity through.
    assert parse_filters(["name=x"]).descend("messagegroups") == Filters()
    rendered = r"a.b['c.d'][*].*[2]!=x\*y,e=*z*,f=null,g,h<=3"
    assert str(parse_filter(rendered)) == rendered
    assert str(parse_filter("messagegroups.messages.x=1", collections=TREE)) == "messagegroups.messages.x=1"
    assert format_path(("labels", "my key")) == "labels['my key']"


def test_excludeall():
    assert parse_filter("excludeall") == FilterExpression(exclude_all=True)
    assert parse_filters(["excludeall"]).exclude_all
    with pytest.raises(XRegistryError) as e:
        parse_filters(["excludeall", "name=x"])
    assert e.value.type == "bad_filter"
    for expr in ("excludeall,name=x", "name=x,excludeall"):
        with pytest.raises(XRegistryError):
            parse_filter(expr)


@pytest.mark.parametrize(
    "expr",
    [
        "",             # empty expression
        "a=1,,b=2",     # empty term
        ",a=1",         # leading comma
        "a=1,",         # trailing comma
        "a..b=1",       # empty path segment
        ".a=1",
        "a.=1",
        "=1",
        "a==1",         # bad operators
        "a=>1",
        "a<<1",
        "a!1",
        "a!==1",
        "a*=1",         # star glued to a name
        "a b=1",        # white space in a path
        "a<null",       # null with an ordering operator
        "a>=null",
        "a<x*",         # wildcard with an ordering operator
        "a[x]=1",       # malformed brackets
        "a['x=1",
        "a['']=1",
        "a['*']=1",     # collides with the reserved "*"
        "a.['b']=1",
        "messagegroups.messages=1",  # a collection, not an attribute
    ],
)
def test_bad_filter(expr):
    with pytest.raises(XRegistryError) as e:
        parse_filter(expr, subject="/messagegroups", collections=TREE)
    err = e.value
    assert err.type == "bad_filter" and err.status == 400 and err.subject == "/messagegroups"
    assert err.args_map["value"] == expr and err.detail
    assert f"({expr})" in err.title


def test_parse_sort():
    assert parse_sort("name") == Sort(("name",))
    assert parse_sort("name=asc") == Sort(("name",))
    assert parse_sort("messageid=desc") == Sort(("messageid",), descending=True)
    assert parse_sort("labels.stage") == Sort(("labels", "stage"))
    assert parse_sort("labels['a=b']=desc") == Sort(("labels", "a=b"), descending=True)
    for bad in ("", "name=", "name=up", "name=desc=x", "a..b", "labels.*", "a[0]", "messages.name"):
        with pytest.raises(XRegistryError) as e:
            parse_sort(bad, collections={"messages": {}})
        assert e.value.type == "bad_sort" and e.value.args_map["value"] == bad


# -- reference semantics -------------------------------------------------------------------

DOC = {
    "name": "My Cool Endpoint",
    "epoch": 3,
    "ratio": 0.5,
    "readonly": True,
    "empty": "",
    "nothing": None,
    "usage": ["producer", "consumer"],
    "ports": [80, 443],
    "labels": {"team": "Blue", "my.key": "a*b", "stage": "prod"},
    "info": {"addresses": {"home": {"state": "CA"}, "work": {"state": "WA"}}, "reviewers": ["Steve"]},
    "obj": {"a": 1},
    "rows": [{"k": "v"}],
}


def m(expr: str, doc: dict = DOC) -> bool:
    return matches(doc, parse_filters([expr]).any_of)


@pytest.mark.parametrize(
    "expr, expected",
    [
        # presence / null
        ("name", True), ("missing", False), ("nothing", False), ("empty", True), ("obj", True),
        ("name=null", False), ("missing=null", True), ("nothing=null", True), ("empty=null", False),
        ("name!=null", True), ("name=*", True), ("epoch=*", True), ("missing=*", False), ("missing!=*", True),
        # strings: case-insensitive
        ("name=my cool endpoint", True), ("name=MY COOL ENDPOINT", True), ("name=my cool", False),
        ("empty=", True), ("name=", False),
        ("name<n", True), ("name>=MY", True), ("name<MY", False),
        # wildcards: whole value, case-insensitive, strings only
        ("name=*cool*", True), ("name=*CooL*", True), ("name=cool*", False), ("name=my*endpoint", True),
        ("name!=*cool*", False), ("name<>*warm*", True), ("epoch=3*", False),
        (r"labels.my\.key=x", False),
        (r"labels['my.key']=a\*b", True), (r"labels['my.key']=a\**", True), (r"labels['my.key']=a\*", False),
        (r"labels['my.key']=*\*", False), (r"labels['my.key']=A*", True),
        # numbers
        ("epoch=3", True), ("epoch=3.0", True), ("epoch>2", True), ("epoch>=3", True), ("epoch<3", False),
        ("epoch>10", False), ("epoch=abc", False), ("epoch!=abc", True), ("epoch>abc", False),
        ("ratio<1", True), ("ratio=.5", True), ("epoch>+2.5e0", True),
        # booleans: exactly true / false
        ("readonly=true", True), ("readonly=false", False), ("readonly=TRUE", False),
        ("readonly>false", True),
        ("readonly!=false", True), ("readonly=1", False),
        # ne is NOT eq: absent and null match
        ("missing!=x", True), ("nothing!=x", True), ("name!=x", True), ("name!=my cool endpoint", False),
        # arrays: any element
        ("usage=producer", True), ("usage=PRODUCER", True), ("usage=other", False), ("usage=prod*", True),
        ("usage!=producer", False), ("usage!=other", True), ("ports>400", True), ("ports>500", False),
        ("usage[*]=consumer", True), ("usage[1]=consumer", True), ("usage[0]=consumer", False),
        ("usage[5]", False), ("usage[5]=null", True),
        # labels and maps
        ("labels.team=blue", True), ("labels.team!=blue", False), ("labels.owner=null", True),
        ("labels.*=prod", True), ("labels.*=red", False), ("labels.*", True),
        ("info.addresses.*.state=CA", True), ("info.addresses.*.state!=CA", False),
        ("info.reviewers[*]=steve", True),
        # non-scalars never compare; keys do not step into lists
        ("obj=x", False), ("obj!=x", True), ("rows.k=v", False), ("rows[*].k=v", True), ("name.x", False),
    ],
)
def test_matches(expr, expected):
    assert m(expr) is expected


def test_matches_composition():
    assert matches(DOC, ())
    assert matches(DOC, ((),))
    assert m("epoch>2,usage=producer,labels.team=blue")
    assert not m("epoch>2,usage=nobody")
    assert matches(DOC, parse_filters(["epoch>5", "name=*cool*"]).any_of)
    assert not matches(DOC, parse_filters(["epoch>5", "name=nope"]).any_of)
    assert not matches({}, parse_filters(["empty="]).any_of)


def test_resolve_and_numbers():
    assert resolve(DOC, ("labels", "*")) == ["Blue", "a*b", "prod"]
    assert resolve(DOC, ("usage",)) == [["producer", "consumer"]]
    assert resolve(DOC, ("missing", "x")) == []
    assert numeric_value("10") == 10 and isinstance(numeric_value("10"), int)
    assert numeric_value("-1.5e2") == -150.0
    for bad in ("", "abc", "1_000", "nan", "inf", " 1", "0x10"):
        assert numeric_value(bad) is None


def test_compare_key():
    values = ["b", None, True, 10, "A", 2.5, False, {"x": 1}, "a", -1]
    ordered = sorted(values, key=compare_key)
    assert ordered[0] is None
    assert ordered[1:4] == [-1, 2.5, 10]
    assert [v.lower() for v in ordered[4:7]] == ["a", "a", "b"]
    assert ordered[7:] == [{"x": 1}, False, True]
    assert compare_key("ABC") == compare_key("abc")
