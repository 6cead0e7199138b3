"""POST /ingest/file: multipart upload, conversion to Markdown, the kept original, replays and conflicts."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memory.models import BLOB_MAX_BYTES, Blob, Operation, Scope, Source, SourceKind, User
from memory.pipeline import conversion
from memory.pipeline.runner import run_operation
from tests import sample_files
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db

PHRASE = "zephyr quokka lantern"
PDF_TYPE = "application/pdf"
DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX_TYPE = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@pytest.fixture(scope="module")
def oversize() -> bytes:
    return bytes(BLOB_MAX_BYTES + 1)


def upload(
    api: Api,
    persona: Persona | None,
    data: bytes,
    *,
    name: str = "notes.txt",
    content_type: str = "text/plain",
    document: Any = None,
    **parts: str,
) -> Any:
    """POST /ingest/file with a `file` part and a `document` part (JSON-encoded unless already a string)."""
    form: dict[str, Any] = {"file": SimpleUploadedFile(name, data, content_type=content_type)}
    document = {"id": "doc_notes"} if document is None else document
    form["document"] = document if isinstance(document, str) else json.dumps(document)
    form.update(parts)
    return api.client.post("/ingest/file", data=form, headers=persona.headers if persona else {})


def source_get(api: Api, persona: Persona, source_id: str) -> Any:
    return api.post("/source/get", persona, {"sourceId": source_id, "includeContent": True})


def operation_get(api: Api, persona: Persona, operation_id: str) -> dict[str, Any]:
    response = api.post("/source/processing/get", persona, {"operationId": operation_id})
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def read_bytes(response: Any) -> bytes:
    """The whole streamed body; the test client closes the response once it is consumed."""
    return b"".join(response.streaming_content)


def row_counts() -> tuple[int, int, int]:
    return Source.objects.count(), Blob.objects.count(), Operation.objects.count()


def stored_files(directory: Path) -> list[Path]:
    return [path for path in directory.rglob("*") if path.is_file()] if directory.exists() else []


FORMATS: list[tuple[str, str, Callable[[str], bytes]]] = [
    ("report.pdf", PDF_TYPE, sample_files.pdf_bytes),
    ("letter.docx", DOCX_TYPE, sample_files.docx_bytes),
    ("deck.pptx", PPTX_TYPE, sample_files.pptx_bytes),
    ("sheet.xlsx", XLSX_TYPE, lambda text: sample_files.xlsx_bytes([["item", "note"], ["first", text]])),
    ("page.html", "text/html", sample_files.html_bytes),
    ("table.csv", "text/csv", lambda text: sample_files.csv_bytes([["item", "note"], ["first", text]])),
    ("data.json", "application/json", sample_files.json_bytes),
    ("notes.txt", "text/plain", sample_files.txt_bytes),
    ("readme.md", "text/markdown", sample_files.md_bytes),
]


@pytest.mark.parametrize(("name", "content_type", "build"), FORMATS, ids=[name for name, _, _ in FORMATS])
def test_each_supported_format_is_accepted_and_its_original_served_back_unchanged(
    api: Api, owner: Persona, name: str, content_type: str, build: Callable[[str], bytes]
) -> None:
    """The receipt and the kept original, checked apart from conversion."""
    data = build(PHRASE)
    response = upload(api, owner, data, name=name, content_type=content_type, document={"id": f"file_{name}"})

    assert response.status_code == 202, response.content
    receipt = response.json()
    assert set(receipt) == {"operationId", "sourceId", "status", "deduplicated"}
    assert (receipt["status"], receipt["deduplicated"]) == ("queued", False)
    assert operation_get(api, owner, receipt["operationId"])["status"] == "queued"
    original = source_get(api, owner, receipt["sourceId"]).json()["content"]["original"]
    assert (original["sha256"], original["size"]) == (hashlib.sha256(data).hexdigest(), len(data))
    served = api.get(original["href"], owner)
    assert (served.status_code, served["Content-Type"]) == (200, content_type)
    assert read_bytes(served) == data


@pytest.mark.parametrize(("name", "content_type", "build"), FORMATS, ids=[name for name, _, _ in FORMATS])
def test_each_supported_format_is_converted_to_markdown_and_its_original_kept(
    api: Api, owner: Persona, alice: User, name: str, content_type: str, build: Callable[[str], bytes]
) -> None:
    phrase = f"{PHRASE} {name.split('.')[1]}"
    data = build(phrase)
    response = upload(api, owner, data, name=name, content_type=content_type, document={"id": f"file_{name}"})

    assert response.status_code == 202, response.content
    receipt = response.json()
    assert set(receipt) == {"operationId", "sourceId", "status", "deduplicated"}
    assert (receipt["status"], receipt["deduplicated"]) == ("queued", False)
    assert receipt["operationId"].startswith("op_") and receipt["sourceId"].startswith("src_")

    run_operation(receipt["operationId"])
    operation = operation_get(api, owner, receipt["operationId"])
    assert (operation["status"], operation["errorCode"]) == ("completed", None), operation
    assert operation["counts"]["convertedChars"] > 0

    answer = source_get(api, owner, receipt["sourceId"])
    assert answer.status_code == 200
    source, content = answer.json()["source"], answer.json()["content"]
    assert (source["kind"], source["id"], source["filename"], source["mimeType"]) == (
        "file",
        f"file_{name}",
        name,
        content_type,
    )
    assert content["format"] == "markdown"
    assert phrase in content["text"]
    sha256 = hashlib.sha256(data).hexdigest()
    assert content["original"]["sha256"] == sha256
    assert content["original"]["size"] == len(data)
    assert content["original"]["filename"] == name
    assert content["original"]["href"] == f"/artifact/{sha256}"

    original = api.get(content["original"]["href"], owner)
    assert original.status_code == 200
    assert original["Content-Type"] == content_type
    assert read_bytes(original) == data


def test_the_original_is_stored_once_in_the_blob_directory(
    api: Api, owner: Persona, alice: User, blob_dir: Path
) -> None:
    data = sample_files.txt_bytes(PHRASE)
    assert upload(api, owner, data).status_code == 202
    sha256 = hashlib.sha256(data).hexdigest()
    assert stored_files(blob_dir) == [blob_dir / str(alice.pk) / sha256[:2] / sha256]
    assert (blob_dir / str(alice.pk) / sha256[:2] / sha256).read_bytes() == data


@pytest.mark.parametrize(
    ("name", "content_type", "data"),
    [
        ("broken.pdf", PDF_TYPE, b"%PDF-1.4\n" + random.Random(7).randbytes(4096)),
        ("data.bin", "application/octet-stream", random.Random(11).randbytes(4096)),
    ],
    ids=["broken-pdf", "unsupported-binary"],
)
def test_an_unconvertible_file_fails_conversion_but_its_original_is_kept(
    api: Api, owner: Persona, name: str, content_type: str, data: bytes
) -> None:
    receipt = upload(api, owner, data, name=name, content_type=content_type).json()
    run_operation(receipt["operationId"])

    operation = operation_get(api, owner, receipt["operationId"])
    assert (operation["status"], operation["errorCode"]) == ("failed", "CONVERSION_FAILED")
    assert name in operation["errorMessage"]
    answer = source_get(api, owner, receipt["sourceId"])
    assert answer.status_code == 200
    content = answer.json()["content"]
    assert content["text"] == ""
    assert content["original"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert read_bytes(api.get(content["original"]["href"], owner)) == data


@pytest.mark.parametrize(
    ("program", "limit_s", "says"),
    [
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", 900, "killed by SIGKILL"),
        ("import time\ntime.sleep(120)\n", 2, "took longer than 2 s"),
    ],
    ids=["crashes", "hangs"],
)
def test_a_converter_that_crashes_or_hangs_fails_the_receipt_with_a_clear_error(
    api: Api,
    owner: Persona,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    program: str,
    limit_s: int,
    says: str,
) -> None:
    # Conversion runs in a process of its own: a parser that dies or never ends must not take the job with it.
    converter = tmp_path / "converter.py"
    converter.write_text(program)
    monkeypatch.setattr(conversion, "CONVERTER", converter)
    settings.PIPELINE_TIME_LIMIT_S = limit_s
    receipt = upload(api, owner, sample_files.pdf_bytes(PHRASE), name="report.pdf", content_type=PDF_TYPE).json()
    run_operation(receipt["operationId"])

    operation = operation_get(api, owner, receipt["operationId"])
    assert (operation["status"], operation["errorCode"]) == ("failed", "CONVERSION_FAILED")
    assert "report.pdf" in operation["errorMessage"]
    assert says in operation["errorMessage"], operation["errorMessage"]


def test_an_identical_replay_answers_the_original_receipt_and_writes_nothing(
    api: Api, owner: Persona, blob_dir: Path
) -> None:
    data = sample_files.pdf_bytes(PHRASE)
    document = {"id": "doc_report", "title": "Report"}
    first = upload(api, owner, data, name="report.pdf", content_type=PDF_TYPE, document=document).json()
    before, files = row_counts(), stored_files(blob_dir)

    replay = upload(api, owner, data, name="report.pdf", content_type=PDF_TYPE, document=document)

    assert replay.status_code == 202
    assert replay.json() == {**first, "deduplicated": True}
    assert row_counts() == before == (1, 1, 1)
    assert stored_files(blob_dir) == files


def test_a_replay_after_processing_reports_the_finished_receipt(api: Api, owner: Persona) -> None:
    data = sample_files.txt_bytes(PHRASE)
    first = upload(api, owner, data).json()
    run_operation(first["operationId"])
    finished = operation_get(api, owner, first["operationId"])["status"]
    assert finished != "queued"
    replay = upload(api, owner, data).json()
    assert replay == {**first, "status": finished, "deduplicated": True}


def test_the_same_file_with_a_new_title_only_updates_the_title(api: Api, owner: Persona) -> None:
    data = sample_files.docx_bytes(PHRASE)
    first = upload(
        api, owner, data, name="letter.docx", content_type=DOCX_TYPE, document={"id": "doc_l", "title": "Old"}
    )
    before = row_counts()

    again = upload(
        api, owner, data, name="letter.docx", content_type=DOCX_TYPE, document={"id": "doc_l", "title": "New"}
    )

    assert again.status_code == 202
    assert again.json() == {**first.json(), "deduplicated": True}
    assert row_counts() == before
    assert source_get(api, owner, first.json()["sourceId"]).json()["source"]["title"] == "New"


def test_the_same_id_with_other_bytes_is_a_conflict(api: Api, owner: Persona, blob_dir: Path) -> None:
    first = upload(api, owner, sample_files.txt_bytes("first draft")).json()
    before, files = row_counts(), stored_files(blob_dir)

    response = upload(api, owner, sample_files.txt_bytes("second draft"))

    assert response.status_code == 409
    assert error_code(response) == "CONFLICT"
    assert response.json()["error"]["details"]["id"] == "doc_notes"
    assert row_counts() == before
    assert stored_files(blob_dir) == files
    assert Source.objects.get().pk == first["sourceId"]


def test_update_existing_replaces_the_file_with_a_new_version(api: Api, owner: Persona) -> None:
    first = upload(api, owner, sample_files.txt_bytes("first draft")).json()
    response = upload(api, owner, sample_files.txt_bytes(f"second draft {PHRASE}"), updateExisting="true")

    assert response.status_code == 202
    second = response.json()
    assert second["deduplicated"] is False
    assert second["sourceId"] != first["sourceId"] and second["operationId"] != first["operationId"]
    old = source_get(api, owner, first["sourceId"]).json()["source"]
    new = source_get(api, owner, second["sourceId"]).json()["source"]
    assert (old["version"], new["version"]) == (1, 2)
    assert old["tombstonedAt"] is not None and new["tombstonedAt"] is None
    assert Source.objects.live().get().pk == second["sourceId"]
    assert Operation.objects.count() == 2


def test_the_old_version_is_not_processed_after_it_was_replaced(api: Api, owner: Persona) -> None:
    first = upload(api, owner, sample_files.txt_bytes("first draft")).json()
    upload(api, owner, sample_files.txt_bytes("second draft"), updateExisting="true")
    run_operation(first["operationId"])
    assert operation_get(api, owner, first["operationId"])["status"] == "failed"
    assert Source.objects.get(pk=first["sourceId"]).markdown == ""


def test_the_document_part_may_hold_the_whole_body(api: Api, owner: Persona, alice: User) -> None:
    first = upload(api, owner, sample_files.md_bytes("first draft"), name="readme.md", content_type="text/markdown")
    body = {"userId": "alice", "updateExisting": True, "document": {"id": "doc_notes", "title": "Readme"}}

    response = upload(
        api, owner, sample_files.md_bytes(PHRASE), name="readme.md", content_type="text/markdown", document=body
    )

    assert response.status_code == 202, response.content
    source = source_get(api, owner, response.json()["sourceId"]).json()["source"]
    assert (source["version"], source["title"], source["id"]) == (2, "Readme", "doc_notes")
    assert Source.objects.get(pk=first.json()["sourceId"]).tombstoned_at is not None


def test_document_metadata_is_kept_on_the_source(api: Api, owner: Persona) -> None:
    document = {
        "id": "doc_meta",
        "title": "Quarterly report",
        "scope": "reference",
        "timestamp": "2026-04-26T13:00:00Z",
        "sourceContext": {"origin": "drive"},
    }
    receipt = upload(api, owner, sample_files.txt_bytes(PHRASE), document=document).json()
    source = source_get(api, owner, receipt["sourceId"]).json()["source"]
    assert (source["title"], source["scope"], source["sourceContext"]) == (
        "Quarterly report",
        "reference",
        {"origin": "drive"},
    )
    assert source["occurredAt"].startswith("2026-04-26T13:00:00")
    assert Source.objects.get().kind == SourceKind.FILE


def _missing_file(api: Api, owner: Persona) -> Any:
    return api.client.post("/ingest/file", data={"document": json.dumps({"id": "doc_x"})}, headers=owner.headers)


def _missing_document(api: Api, owner: Persona) -> Any:
    form = {"file": SimpleUploadedFile("notes.txt", b"some text", content_type="text/plain")}
    return api.client.post("/ingest/file", data=form, headers=owner.headers)


MALFORMED: list[tuple[str, Callable[[Api, Persona], Any], int, str, str]] = [
    ("missing-file", _missing_file, 400, "VALIDATION_ERROR", "file"),
    ("missing-document", _missing_document, 400, "VALIDATION_ERROR", "document"),
    (
        "invalid-json",
        lambda api, owner: upload(api, owner, b"some text", document="{not json"),
        400,
        "VALIDATION_ERROR",
        "document",
    ),
    (
        "document-not-an-object",
        lambda api, owner: upload(api, owner, b"some text", document=["doc_x"]),
        400,
        "VALIDATION_ERROR",
        "document",
    ),
    (
        "unknown-part",
        lambda api, owner: upload(api, owner, b"some text", colour="blue"),
        400,
        "VALIDATION_ERROR",
        "colour",
    ),
    (
        "unknown-document-field",
        lambda api, owner: upload(api, owner, b"some text", document={"id": "doc_x", "content": "inline"}),
        400,
        "VALIDATION_ERROR",
        "document",
    ),
    (
        "document-without-id",
        lambda api, owner: upload(api, owner, b"some text", document={"title": "No id"}),
        400,
        "VALIDATION_ERROR",
        "document",
    ),
    (
        "json-body",
        lambda api, owner: api.post("/ingest/file", owner, {"document": {"id": "doc_x"}}),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "",
    ),
]


@pytest.mark.parametrize(("case", "send", "status", "code", "field"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_uploads_are_refused_and_write_nothing(
    api: Api,
    owner: Persona,
    blob_dir: Path,
    case: str,
    send: Callable[[Api, Persona], Any],
    status: int,
    code: str,
    field: str,
) -> None:
    response = send(api, owner)
    assert response.status_code == status, response.content
    assert error_code(response) == code
    if field:
        assert field in response.json()["error"]["details"]
    assert row_counts() == (0, 0, 0)
    assert stored_files(blob_dir) == []


def test_document_without_id_names_the_missing_field(api: Api, owner: Persona) -> None:
    response = upload(api, owner, b"some text", document={"title": "No id"})
    assert response.json()["error"]["details"]["document"] == {"id": ["This field is required."]}


def test_a_file_over_50_mb_is_refused_and_nothing_is_stored(
    api: Api, owner: Persona, alice: User, blob_dir: Path, oversize: bytes
) -> None:
    response = upload(api, owner, oversize, name="huge.bin", content_type="application/octet-stream")

    assert response.status_code == 413
    assert error_code(response) == "PAYLOAD_TOO_LARGE"
    assert response.json()["error"]["details"] == {"maxBytes": BLOB_MAX_BYTES}
    assert not Blob.objects.exists()
    assert row_counts() == (0, 0, 0)
    assert not (blob_dir / str(alice.pk)).exists()
    assert stored_files(blob_dir) == []


def test_a_file_of_exactly_50_mb_is_accepted(api: Api, owner: Persona, oversize: bytes) -> None:
    data = oversize[:BLOB_MAX_BYTES]
    response = upload(api, owner, data, name="huge.bin", content_type="application/octet-stream")
    assert response.status_code == 202, response.content
    assert Blob.objects.get().size == BLOB_MAX_BYTES


def test_outsider_cannot_upload(api: Api, outsider: Persona, blob_dir: Path) -> None:
    response = upload(api, outsider, sample_files.txt_bytes(PHRASE))
    assert response.status_code == 401
    assert error_code(response) == "TOKEN_INVALID"
    assert row_counts() == (0, 0, 0)
    assert stored_files(blob_dir) == []


def test_anonymous_caller_cannot_upload(api: Api, blob_dir: Path) -> None:
    response = upload(api, None, sample_files.txt_bytes(PHRASE))
    assert response.status_code == 401
    assert error_code(response) == "AUTH_REQUIRED"
    assert row_counts() == (0, 0, 0)


def test_revoked_token_cannot_upload(api: Api, revoked: Persona, blob_dir: Path) -> None:
    response = upload(api, revoked, sample_files.txt_bytes(PHRASE))
    assert response.status_code == 401
    assert error_code(response) == "TOKEN_REVOKED"
    assert row_counts() == (0, 0, 0)
    assert stored_files(blob_dir) == []


def test_read_only_token_cannot_upload(api: Api, alice: User, blob_dir: Path) -> None:
    reader = issue(alice, "reader", scopes=[Scope.READ])
    response = upload(api, reader, sample_files.txt_bytes(PHRASE))
    assert response.status_code == 403
    assert error_code(response) == "SCOPE_REQUIRED"
    assert response.json()["error"]["details"] == {"requiredScope": "write"}
    assert row_counts() == (0, 0, 0)
    assert stored_files(blob_dir) == []


def test_host_token_uploads_for_the_user_it_acts_for(api: Api, host: Persona, owner: Persona, alice: User) -> None:
    data = sample_files.txt_bytes(PHRASE)
    response = upload(api, host, data, userId="alice")
    assert response.status_code == 202, response.content
    source = Source.objects.get(pk=response.json()["sourceId"])
    assert source.owner == alice
    assert source_get(api, owner, source.pk).status_code == 200
    original = api.get(f"/artifact/{hashlib.sha256(data).hexdigest()}?userId=alice", host)
    assert read_bytes(original) == data


def test_other_user_cannot_read_owners_file_or_its_original(api: Api, owner: Persona, other: Persona) -> None:
    data = sample_files.pdf_bytes(PHRASE)
    receipt = upload(api, owner, data, name="report.pdf", content_type=PDF_TYPE).json()
    run_operation(receipt["operationId"])
    sha256 = hashlib.sha256(data).hexdigest()

    response = source_get(api, other, receipt["sourceId"])
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"
    artifact = api.get(f"/artifact/{sha256}", other)
    assert artifact.status_code == 404
    assert error_code(artifact) == "NOT_FOUND"
    operation = api.post("/source/processing/get", other, {"operationId": receipt["operationId"]})
    assert error_code(operation) == "NOT_FOUND"


def test_the_same_file_from_two_users_is_two_sources_and_two_blobs(api: Api, owner: Persona, other: Persona) -> None:
    data = sample_files.txt_bytes(PHRASE)
    mine, theirs = upload(api, owner, data).json(), upload(api, other, data).json()
    assert mine["deduplicated"] is False and theirs["deduplicated"] is False
    assert mine["sourceId"] != theirs["sourceId"]
    assert Blob.objects.count() == 2


def test_a_file_goes_to_the_partition_named_in_its_form_part(api: Api, owner: Persona, alice: User) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    receipt = upload(api, owner, sample_files.txt_bytes(PHRASE), partitionKey="project:apollo").json()
    assert Source.objects.get(pk=receipt["sourceId"]).partition.key == "project:apollo"
    limited = issue(alice, "limited", scopes=Scope.values, partition_keys=["memory:personal"])
    assert error_code(source_get(api, limited, receipt["sourceId"])) == "NOT_FOUND"


def test_a_partition_limited_token_cannot_read_the_original_of_a_file_outside_its_partitions(
    api: Api, owner: Persona, alice: User
) -> None:
    PartitionFactory.create(owner=alice, key="project:apollo")
    data = sample_files.txt_bytes(PHRASE)
    upload(api, owner, data, partitionKey="project:apollo")
    limited = issue(alice, "limited", scopes=Scope.values, partition_keys=["memory:personal"])
    response = api.get(f"/artifact/{hashlib.sha256(data).hexdigest()}", limited)
    assert response.status_code == 404


def test_an_overlong_content_type_is_kept_as_octet_stream(api: Api, owner: Persona) -> None:
    from memory.models import Blob

    response = upload(api, owner, b"plain words", name="a.txt", content_type="text/" + "x" * 300)
    assert response.status_code == 202
    assert Blob.objects.get().mime_type == "application/octet-stream"


def test_an_upload_from_the_ui_is_named_by_its_file_and_a_second_one_replaces_it(alice: User) -> None:
    from memory.access import access_for_user
    from memory.errors import ValidationFailed
    from memory.services.blobs import SpooledUpload
    from memory.services.ingestion import ingest_upload

    access = access_for_user(user=alice)
    with pytest.raises(ValidationFailed) as refused:
        ingest_upload(access=access, upload=None, filename="", mime_type="", scope="personal")
    assert refused.value.details == {"file": ["This field is required."]}
    assert not Source.objects.filter(owner=alice).exists()
    first = ingest_upload(
        access=access, upload=SpooledUpload([b"# Notes\n\nv1\n"]), filename="notes.md", mime_type="text/markdown",
        scope="personal",
    )  # fmt: skip
    second = ingest_upload(
        access=access, upload=SpooledUpload([b"# Notes\n\nv2\n"]), filename="notes.md", mime_type="text/markdown",
        scope="personal",
    )  # fmt: skip
    assert (first.source.external_id, first.source.version) == ("notes.md", 1)
    assert (second.source.external_id, second.source.version) == ("notes.md", 2)  # a new version, same identity
