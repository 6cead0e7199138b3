"""PUT /artifact, GET /artifact/<sha256> (streamed, HTTP Range) and POST /artifact/list."""

from __future__ import annotations

import hashlib
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from memory.models import BLOB_MAX_BYTES, Blob, Scope
from tests import sample_files
from tests.conftest import Api, Persona, error_code, issue

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # 1,032 bytes, every offset distinct enough to check slices
PNG_SHA = hashlib.sha256(PNG).hexdigest()


@pytest.fixture(scope="module")
def oversize() -> bytes:
    """One byte over the cap, built once for the module."""
    return bytes(BLOB_MAX_BYTES + 1)


def put(api: Api, persona: Persona | None, data: bytes, content_type: str = "image/png", query: str = "") -> Any:
    headers = persona.headers if persona else {}
    return api.client.put(f"/artifact{query}", data=data, content_type=content_type, headers=headers)


def get(api: Api, persona: Persona | None, sha256: str, range_: str | None = None, query: str = "") -> Any:
    headers = {**(persona.headers if persona else {}), **({"Range": range_} if range_ is not None else {})}
    return api.client.get(f"/artifact/{sha256}{query}", headers=headers)


def read_bytes(response: Any) -> bytes:
    """The whole streamed body; the test client closes the response once it is consumed."""
    return b"".join(response.streaming_content)


def stored_files(directory: Path) -> list[Path]:
    return [path for path in directory.rglob("*") if path.is_file()] if directory.exists() else []


def test_owner_puts_an_artifact_and_gets_its_content_address(
    api: Api, owner: Persona, alice: Any, blob_dir: Path
) -> None:
    response = put(api, owner, PNG)

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"sha256", "size", "mimeType", "createdAt", "deduplicated", "href"}
    assert (body["sha256"], body["size"], body["mimeType"]) == (PNG_SHA, len(PNG), "image/png")
    assert (body["deduplicated"], body["href"]) == (False, f"/artifact/{PNG_SHA}")
    blob = Blob.objects.get()
    assert (blob.owner, blob.sha256, blob.size, blob.is_artifact) == (alice, PNG_SHA, len(PNG), True)
    assert stored_files(blob_dir) == [blob_dir / str(alice.pk) / PNG_SHA[:2] / PNG_SHA]
    assert stored_files(blob_dir)[0].read_bytes() == PNG


def test_putting_the_same_bytes_again_is_deduplicated(api: Api, owner: Persona, blob_dir: Path) -> None:
    first = put(api, owner, PNG).json()
    again = put(api, owner, PNG)
    assert again.status_code == 200
    assert again.json() == {**first, "deduplicated": True}
    assert Blob.objects.count() == 1
    assert len(stored_files(blob_dir)) == 1


def test_the_media_type_is_kept_without_its_parameters(api: Api, owner: Persona) -> None:
    body = put(api, owner, b"hello artifact", content_type="text/plain; charset=utf-8").json()
    assert body["mimeType"] == "text/plain"
    response = get(api, owner, body["sha256"])
    assert response["Content-Type"] == "text/plain"
    assert read_bytes(response) == b"hello artifact"


def test_owner_gets_the_whole_artifact_streamed(api: Api, owner: Persona) -> None:
    put(api, owner, PNG)
    response = get(api, owner, PNG_SHA)

    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "image/png"
    assert response["Content-Length"] == str(len(PNG))
    assert response["Accept-Ranges"] == "bytes"
    assert response["ETag"] == f'"{PNG_SHA}"'
    assert read_bytes(response) == PNG


def test_the_hash_may_be_given_in_upper_case(api: Api, owner: Persona) -> None:
    put(api, owner, PNG)
    assert read_bytes(get(api, owner, PNG_SHA.upper())) == PNG


def test_head_answers_the_headers_without_the_body(api: Api, owner: Persona) -> None:
    put(api, owner, PNG)
    response = api.client.head(f"/artifact/{PNG_SHA}", headers=owner.headers)
    assert response.status_code == 200
    assert (response["Content-Length"], response["ETag"]) == (str(len(PNG)), f'"{PNG_SHA}"')
    assert read_bytes(response) == b""


@pytest.mark.parametrize(
    ("range_", "first", "last"),
    [
        ("bytes=10-19", 10, 19),
        ("bytes=10-", 10, len(PNG) - 1),
        ("bytes=-5", len(PNG) - 5, len(PNG) - 1),
        ("bytes=0-0", 0, 0),
        (f"bytes={len(PNG) - 1}-", len(PNG) - 1, len(PNG) - 1),
        (f"bytes=100-{len(PNG) + 500}", 100, len(PNG) - 1),  # a last byte past the end is clamped
        (f"bytes=-{len(PNG) + 500}", 0, len(PNG) - 1),  # a suffix longer than the artifact is all of it
        (" bytes=10-19 ", 10, 19),
    ],
)
def test_a_byte_range_answers_206_with_exactly_those_bytes(
    api: Api, owner: Persona, range_: str, first: int, last: int
) -> None:
    put(api, owner, PNG)
    response = get(api, owner, PNG_SHA, range_)

    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes {first}-{last}/{len(PNG)}"
    assert response["Content-Length"] == str(last - first + 1)
    assert (response["Content-Type"], response["Accept-Ranges"]) == ("image/png", "bytes")
    assert response["ETag"] == f'"{PNG_SHA}"'
    assert read_bytes(response) == PNG[first : last + 1]


def test_a_range_across_read_pieces_is_exact(api: Api, owner: Persona) -> None:
    data = random.Random(3).randbytes(700_000)  # the range reader sends 256 KiB pieces
    sha256 = put(api, owner, data, content_type="application/octet-stream").json()["sha256"]
    response = get(api, owner, sha256, "bytes=200000-600000")
    assert response.status_code == 206
    assert read_bytes(response) == data[200_000:600_001]


@pytest.mark.parametrize("range_", [f"bytes={len(PNG)}-", f"bytes={len(PNG) + 10}-{len(PNG) + 20}", "bytes=-0"])
def test_an_unsatisfiable_range_answers_416(api: Api, owner: Persona, range_: str) -> None:
    put(api, owner, PNG)
    response = get(api, owner, PNG_SHA, range_)
    assert response.status_code == 416
    assert error_code(response) == "RANGE_NOT_SATISFIABLE"
    assert response.json()["error"]["details"] == {"size": len(PNG)}


def test_an_unsatisfiable_range_names_the_current_length(api: Api, owner: Persona) -> None:
    put(api, owner, PNG)
    response = get(api, owner, PNG_SHA, f"bytes={len(PNG)}-")
    assert response.status_code == 416
    assert response.get("Content-Range") == f"bytes */{len(PNG)}"


@pytest.mark.parametrize("range_", ["bytes=abc", "items=0-5", "bytes=0-1,5-6", "bytes=-", "10-19", ""])
def test_a_malformed_range_answers_the_whole_artifact(api: Api, owner: Persona, range_: str) -> None:
    put(api, owner, PNG)
    response = get(api, owner, PNG_SHA, range_)
    assert response.status_code == 200
    assert not response.has_header("Content-Range")
    assert read_bytes(response) == PNG


def test_an_unknown_hash_is_not_found(api: Api, owner: Persona) -> None:
    response = get(api, owner, "0" * 64)
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"


def test_an_empty_body_is_refused(api: Api, owner: Persona, blob_dir: Path) -> None:
    response = put(api, owner, b"")
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert "body" in response.json()["error"]["details"]
    assert not Blob.objects.exists()
    assert stored_files(blob_dir) == []


def test_a_body_over_50_mb_is_refused_and_nothing_is_stored(
    api: Api, owner: Persona, blob_dir: Path, oversize: bytes
) -> None:
    response = put(api, owner, oversize, content_type="application/octet-stream")
    assert response.status_code == 413
    assert error_code(response) == "PAYLOAD_TOO_LARGE"
    assert response.json()["error"]["details"] == {"maxBytes": BLOB_MAX_BYTES}
    assert not Blob.objects.exists()
    assert stored_files(blob_dir) == []


def test_a_body_of_exactly_50_mb_is_stored_intact(api: Api, owner: Persona, blob_dir: Path) -> None:
    data = bytes(BLOB_MAX_BYTES - 1) + b"\x01"  # larger than the in-memory spool, so it goes through a file
    response = put(api, owner, data, content_type="application/octet-stream")
    assert response.status_code == 201, response.content
    assert response.json()["size"] == BLOB_MAX_BYTES
    (path,) = stored_files(blob_dir)
    assert path.stat().st_size == BLOB_MAX_BYTES
    assert (
        hashlib.sha256(path.read_bytes()).hexdigest() == response.json()["sha256"] == hashlib.sha256(data).hexdigest()
    )


def test_wrong_methods_are_refused(api: Api, owner: Persona) -> None:
    put(api, owner, PNG)
    on_put = api.post("/artifact", owner, {})
    assert on_put.status_code == 405
    assert error_code(on_put) == "METHOD_NOT_ALLOWED"
    assert on_put.json()["error"]["details"] == {"allowed": ["PUT"]}
    on_get = api.client.put(f"/artifact/{PNG_SHA}", data=PNG, content_type="image/png", headers=owner.headers)
    assert on_get.status_code == 405
    assert error_code(on_get) == "METHOD_NOT_ALLOWED"


@pytest.mark.django_db(transaction=True)  # each upload commits on its own, at its own time
def test_owner_lists_artifacts_newest_first_in_pages(api: Api, owner: Persona) -> None:
    shas = []
    for index in range(3):
        shas.append(put(api, owner, f"artifact {index}".encode(), content_type="text/plain").json()["sha256"])
    # Ids are ULIDs: within one millisecond their random tail orders them, so id order can disagree with time
    # order. Make it disagree on purpose (the first stored is the newest by time): only an order by time passes.
    now = timezone.now()
    for age, sha in enumerate(shas):
        Blob.objects.filter(sha256=sha).update(created_at=now - timedelta(seconds=age))
    newest_first = shas

    everything = api.post("/artifact/list", owner, {}).json()
    assert [a["sha256"] for a in everything["artifacts"]] == newest_first
    assert everything["nextCursor"] is None
    assert set(everything["artifacts"][0]) == {"sha256", "size", "mimeType", "createdAt", "href"}

    first = api.post("/artifact/list", owner, {"limit": 2}).json()
    assert [a["sha256"] for a in first["artifacts"]] == newest_first[:2]
    assert first["nextCursor"]
    second = api.post("/artifact/list", owner, {"limit": 2, "cursor": first["nextCursor"]}).json()
    assert [a["sha256"] for a in second["artifacts"]] == newest_first[2:]
    assert second["nextCursor"] is None


def test_an_exact_page_has_no_next_cursor(api: Api, owner: Persona) -> None:
    put(api, owner, b"one")
    put(api, owner, b"two")
    page = api.post("/artifact/list", owner, {"limit": 2}).json()
    assert len(page["artifacts"]) == 2
    assert page["nextCursor"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cursor": "not a cursor!"}, "cursor"),
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_invalid_list_requests_are_validation_errors(
    api: Api, owner: Persona, body: dict[str, Any], field: str
) -> None:
    response = api.post("/artifact/list", owner, body)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]


def test_a_files_original_is_not_listed_until_it_is_put_as_an_artifact(api: Api, owner: Persona, alice: Any) -> None:
    from memory.services.blobs import SpooledUpload, blob_store

    data = sample_files.pdf_bytes("quarterly numbers")
    upload = SpooledUpload([data])
    try:
        blob_store(owner=alice, upload=upload, mime_type="application/pdf")
    finally:
        upload.close()
    assert api.post("/artifact/list", owner, {}).json()["artifacts"] == []

    response = put(api, owner, data, content_type="application/pdf")
    assert response.status_code == 200
    assert response.json()["deduplicated"] is True
    listed = api.post("/artifact/list", owner, {}).json()["artifacts"]
    assert [a["sha256"] for a in listed] == [hashlib.sha256(data).hexdigest()]


def test_other_user_cannot_get_owners_artifact(api: Api, owner: Persona, other: Persona) -> None:
    put(api, owner, PNG)
    response = get(api, other, PNG_SHA)
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"
    ranged = get(api, other, PNG_SHA, "bytes=0-9")
    assert ranged.status_code == 404
    assert api.post("/artifact/list", other, {}).json()["artifacts"] == []


def test_other_user_putting_the_same_bytes_gets_their_own_copy(
    api: Api, owner: Persona, other: Persona, alice: Any, bob: Any, blob_dir: Path
) -> None:
    assert put(api, owner, PNG).status_code == 201
    response = put(api, other, PNG)
    assert response.status_code == 201
    assert response.json()["deduplicated"] is False
    assert {blob.owner for blob in Blob.objects.filter(sha256=PNG_SHA)} == {alice, bob}
    assert sorted(stored_files(blob_dir)) == sorted(
        blob_dir / str(user.pk) / PNG_SHA[:2] / PNG_SHA for user in (alice, bob)
    )
    assert read_bytes(get(api, other, PNG_SHA)) == PNG


def test_read_only_token_cannot_put_but_can_read(api: Api, owner: Persona, alice: Any, blob_dir: Path) -> None:
    reader = issue(alice, "reader", scopes=[Scope.READ])
    response = put(api, reader, b"a new artifact")
    assert response.status_code == 403
    assert error_code(response) == "SCOPE_REQUIRED"
    assert response.json()["error"]["details"] == {"requiredScope": "write"}
    assert not Blob.objects.exists()
    assert stored_files(blob_dir) == []

    put(api, owner, PNG)
    assert read_bytes(get(api, reader, PNG_SHA)) == PNG
    assert len(api.post("/artifact/list", reader, {}).json()["artifacts"]) == 1


def test_write_only_token_cannot_read(api: Api, owner: Persona, alice: Any) -> None:
    writer = issue(alice, "writer", scopes=[Scope.WRITE])
    assert put(api, writer, PNG).status_code == 201
    assert error_code(get(api, writer, PNG_SHA)) == "SCOPE_REQUIRED"
    assert error_code(api.post("/artifact/list", writer, {})) == "SCOPE_REQUIRED"


@pytest.mark.parametrize(("persona_name", "code"), [("outsider", "TOKEN_INVALID"), ("revoked", "TOKEN_REVOKED")])
def test_outsider_and_revoked_tokens_are_refused_everywhere(
    api: Api, owner: Persona, blob_dir: Path, request: pytest.FixtureRequest, persona_name: str, code: str
) -> None:
    put(api, owner, PNG)
    persona: Persona = request.getfixturevalue(persona_name)
    for response in (
        put(api, persona, b"sneaky bytes"),
        get(api, persona, PNG_SHA),
        get(api, persona, PNG_SHA, "bytes=0-9"),
        api.post("/artifact/list", persona, {}),
    ):
        assert response.status_code == 401
        assert error_code(response) == code
    assert Blob.objects.count() == 1
    assert len(stored_files(blob_dir)) == 1


def test_anonymous_caller_cannot_get_an_artifact(api: Api, owner: Persona) -> None:
    put(api, owner, PNG)
    response = get(api, None, PNG_SHA)
    assert response.status_code == 401
    assert error_code(response) == "AUTH_REQUIRED"


def test_host_token_reads_and_puts_for_the_user_it_acts_for(
    api: Api, host: Persona, owner: Persona, alice: Any
) -> None:
    put(api, owner, PNG)
    assert read_bytes(get(api, host, PNG_SHA, query="?userId=alice")) == PNG
    ranged = get(api, host, PNG_SHA, "bytes=0-7", query="?userId=alice")
    assert (ranged.status_code, read_bytes(ranged)) == (206, PNG[:8])

    stored = put(api, host, b"from the host", content_type="text/plain", query="?userId=alice")
    assert stored.status_code == 201
    assert Blob.objects.get(sha256=stored.json()["sha256"]).owner == alice


def test_host_token_must_name_the_user(api: Api, host: Persona, owner: Persona, bob: Any) -> None:
    put(api, owner, PNG)
    missing = get(api, host, PNG_SHA)
    assert missing.status_code == 400
    assert error_code(missing) == "VALIDATION_ERROR"
    assert "userId" in missing.json()["error"]["details"]
    stranger = get(api, host, PNG_SHA, query="?userId=bob")
    assert stranger.status_code == 404
    assert error_code(stranger) == "NOT_FOUND"


def test_unknown_query_parameters_are_refused(api: Api, owner: Persona) -> None:
    put(api, owner, PNG)
    response = get(api, owner, PNG_SHA, query="?download=1")
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
