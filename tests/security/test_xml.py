"""XML payloads (XSD messages) are screened before any parser expands them: an external entity,
a billion-laughs document and 20,000-deep nesting are refused with the reason, the file unread,
never an internal error."""

from __future__ import annotations

from tests.security.conftest import store_message, validate_anonymously

XSD = ('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">'
       '<xs:element name="r" type="xs:string"/></xs:schema>')
SECRET = "s3cr3t-marker-1b9e"


async def test_an_external_entity_is_not_read(gateway, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    xid = await store_message(gateway, "xxe", "XSD/1.0", XSD)
    payload = f'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "{secret.as_uri()}">]><r>&x;</r>'
    result = await validate_anonymously(gateway, xid, payload)
    assert result["validated"] is False and "entit" in result["reason"]
    assert SECRET not in str(result)


async def test_billion_laughs_is_refused(gateway):
    xid = await store_message(gateway, "laughs", "XSD/1.0", XSD)
    entities = '<!ENTITY a0 "lol">' + "".join(
        f'<!ENTITY a{i} "{("&a" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
    payload = f'<?xml version="1.0"?><!DOCTYPE r [{entities}]><r>&a9;</r>'
    result = await validate_anonymously(gateway, xid, payload)
    assert result["validated"] is False and "entit" in result["reason"]


async def test_deep_xml_is_refused(gateway):
    xid = await store_message(gateway, "deep", "XSD/1.0", XSD)
    result = await validate_anonymously(gateway, xid, "<r>" * 20_000 + "</r>" * 20_000)
    assert result["validated"] is False and "XREG_EVAL_MAX_DEPTH" in result["reason"]


async def test_a_payload_naming_a_file_is_xml_text_not_a_path(gateway, tmp_path):
    secret = tmp_path / "secret.xml"
    secret.write_text(f"<r>{SECRET}</r>")
    xid = await store_message(gateway, "path", "XSD/1.0", XSD)
    result = await validate_anonymously(gateway, xid, str(secret))
    assert result["validated"] is True and result["valid"] is False
    assert SECRET not in str(result)


async def test_plain_xml_is_still_validated(gateway):
    xid = await store_message(gateway, "plain", "XSD/1.0", XSD)
    assert (await validate_anonymously(gateway, xid, "<r>hello</r>"))["valid"] is True
    bad = await validate_anonymously(gateway, xid, "<q>hello</q>")
    assert bad["validated"] is True and bad["valid"] is False
