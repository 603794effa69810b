"""Reading xRegistry documents from JSON / YAML files and finding them in directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus import XREG_DATA
from xreg.documents.reader import find_documents, read_document
from xreg.errors import XRegistryError

DATA = XREG_DATA


def test_finds_every_real_document_and_nothing_else() -> None:
    found = find_documents([DATA])
    names = [p.name for p in found]
    assert len(found) == 14
    assert names == sorted(names)
    assert "README.md" not in names and "SHA256SUMS" not in names
    assert "codegen-5675db7__Microsoft.Storage.0.4-wip.cereg.json" in names


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")) if DATA.is_dir() else [], ids=lambda p: p.name)
def test_reads_every_real_document(path: Path) -> None:
    doc = read_document(path)
    assert isinstance(doc, dict)
    assert {"messagegroups", "schemagroups", "definitiongroups"} & doc.keys()


def test_yaml_documents_keep_timestamps_and_keys_as_strings(tmp_path: Path) -> None:
    path = tmp_path / "registry.cereg.yaml"
    path.write_text(
        "schemagroups:\n"
        "  g1:\n"
        "    createdat: 2024-10-18T13:47:59Z\n"
        "    schemas:\n"
        "      s1:\n"
        "        versions:\n"
        "          1: {format: Avro/1.11.0}\n"
    )
    doc = read_document(path)
    group = doc["schemagroups"]["g1"]
    assert group["createdat"] == "2024-10-18T13:47:59Z"
    assert list(group["schemas"]["s1"]["versions"]) == ["1"]


@pytest.mark.parametrize(
    "text", ['{"messagegroups": {}}', "messagegroups: {}\n"], ids=["json", "yaml"]
)
def test_cereg_may_be_json_or_yaml(tmp_path: Path, text: str) -> None:
    path = tmp_path / "catalog.cereg"
    path.write_text(text)
    assert read_document(path) == {"messagegroups": {}}


def test_yml_and_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "doc.yml"
    path.write_bytes("\ufeffendpoints: {e1: {usage: [producer]}}\n".encode())
    assert read_document(path) == {"endpoints": {"e1": {"usage": ["producer"]}}}


def _parse_error(path: Path) -> XRegistryError:
    with pytest.raises(XRegistryError) as caught:
        read_document(path)
    err = caught.value
    assert err.type == "parsing_data"
    assert err.subject == "/"
    assert err.detail.startswith(f"{path}: line ")
    assert path.name in str(err)
    return err


@pytest.mark.parametrize("name", ["broken.xreg.json", "broken.json", "broken.cereg"])
def test_bad_json_names_file_line_and_column(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text('{\n  "messagegroups": {\n    "g1": {,}\n  }\n}\n')
    err = _parse_error(path)
    assert "line 3 column 12" in err.detail


@pytest.mark.parametrize("name", ["broken.yaml", "broken.cereg.yaml", "broken.cereg"])
def test_bad_yaml_names_file_line_and_column(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("messagegroups:\n  g1:\n    description: [unclosed\n  g2: {}\n")
    err = _parse_error(path)
    assert "line 4" in err.detail


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("list.xreg.json", '[{"messagegroups": {}}]', "an array"),
        ("list.yaml", "- messagegroups: {}\n", "an array"),
        ("scalar.json", '"messagegroups"', "str"),
        ("empty.yaml", "", "null"),
    ],
)
def test_top_level_must_be_an_object(tmp_path: Path, name: str, text: str, kind: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    err = _parse_error(path)
    assert err.detail == f"{path}: line 1 column 1: the top level is {kind}, not an object"


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"description": "caf\xe9"}')
    assert "not UTF-8" in _parse_error(path).detail


def test_find_documents_recurses_sorted_and_skips_other_files(tmp_path: Path) -> None:
    for rel in [
        "b/feed.xreg.json", "a/nested/deep.cereg", "a/one.yaml", "a/two.YML", "a/three.cereg.yml",
        "a/README.md", "SHA256SUMS", "notes.txt", ".hidden/skip.json", "a/.skip.json",
    ]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    explicit = tmp_path / "notes.txt"
    found = find_documents([tmp_path, explicit, tmp_path / "b"])
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "a/nested/deep.cereg", "a/one.yaml", "a/three.cereg.yml", "a/two.YML", "b/feed.xreg.json",
        "notes.txt",
    ]


def test_find_documents_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        find_documents([tmp_path / "nope"])
