"""Small real files built in memory, each carrying a phrase the tests look for after conversion.

Every builder returns the file's bytes; none touches the disk. The PDF and DOCX are written by hand (the
smallest files their readers accept), PPTX and XLSX with python-pptx and openpyxl.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape


def _pdf_string(text: str) -> str:
    """A PDF literal string: backslash and parentheses escaped."""
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def pdf_bytes(text: str) -> bytes:
    """A one-page PDF showing `text` in Helvetica, with a correct cross-reference table (ASCII text only)."""
    stream = f"BT /F1 12 Tf 72 720 Td {_pdf_string(text)} Tj ET".encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref_at = len(out)
    out += f"xref\n0 {len(objects) + 1}\n".encode()
    out += b"0000000000 65535 f \n"  # each entry is exactly 20 bytes, end of line included
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref_at}\n%%EOF\n".encode()
    return bytes(out)


_DOCX_CONTENT_TYPES = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml"
 ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
</Types>"""

_DOCX_RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1"
 Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
 Target="word/document.xml"/>
</Relationships>"""

_DOCX_DOCUMENT_RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"></Relationships>"""

_DOCX_DOCUMENT = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:body><w:p><w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p></w:body>
</w:document>"""


def _zip(parts: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in parts.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def docx_bytes(text: str) -> bytes:
    """A minimal Word document with one paragraph holding `text`."""
    return _zip(
        {
            "[Content_Types].xml": _DOCX_CONTENT_TYPES,
            "_rels/.rels": _DOCX_RELS,
            "word/document.xml": _DOCX_DOCUMENT.format(text=escape(text)),
            "word/_rels/document.xml.rels": _DOCX_DOCUMENT_RELS,
        }
    )


def pptx_bytes(text: str) -> bytes:
    """A one-slide presentation whose title is `text`."""
    from pptx import Presentation

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])  # "Title Only"
    slide.shapes.title.text = text
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def xlsx_bytes(rows: Sequence[Sequence[Any]]) -> bytes:
    """A workbook with one sheet holding `rows` (the first row reads as the header)."""
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in rows:
        sheet.append(list(row))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def html_bytes(text: str) -> bytes:
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Sample</title></head>"
        f"<body><h1>Notes</h1><p>{escape(text)}</p></body></html>"
    ).encode()


def csv_bytes(rows: Sequence[Sequence[Any]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue().encode()


def json_bytes(text: str) -> bytes:
    return json.dumps({"note": text, "tags": ["sample"]}, indent=2).encode()


def txt_bytes(text: str) -> bytes:
    return f"Plain notes.\n{text}\n".encode()


def md_bytes(text: str) -> bytes:
    return f"# Notes\n\n- {text}\n".encode()
