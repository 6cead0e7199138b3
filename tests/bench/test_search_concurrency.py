"""bench/search_concurrency.py reads what the server logged while it was asked, and nothing from before."""

from __future__ import annotations

import json
from pathlib import Path

from bench.search_concurrency import logged


def test_logged_counts_the_warnings_and_errors_after_the_offset_by_event(tmp_path: Path) -> None:
    log = tmp_path / "uvicorn.log"
    before = json.dumps({"level": "warning", "event": "recall.bookkeeping_dropped"}) + "\n"
    after = [
        {"level": "warning", "event": "recall.bookkeeping_dropped"},
        {"level": "info", "event": "recall.embedder_warmed"},
        {"level": "error", "event": "request.failed"},
        {"level": "warning", "event": "recall.bookkeeping_dropped"},
    ]
    traceback = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: x\n'
    log.write_text(before + "".join(json.dumps(line) + "\n" for line in after) + traceback)

    found = logged(log, since=len(before.encode()))

    assert found == {"recall.bookkeeping_dropped": 2, "request.failed": 1, "Traceback (most recent call last):": 1}


def test_asked_counts_answers_not_200_and_dropped_connections_as_not_ok() -> None:
    """Against a stand-in server on loopback (the client's counting is what is tested, not the service): every third
    answer is a 503, every fifth request has its connection closed unanswered."""
    import itertools
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from bench.search_concurrency import asked

    numbers = itertools.count(1)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            number = next(numbers)
            if number % 5 == 0:
                self.close_connection = True
                return
            self.send_response(503 if number % 3 == 0 else 200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        found = asked(f"http://127.0.0.1:{server.server_address[1]}", "secret", ["a", "b"], 2, 0.3)
    finally:
        server.shutdown()
        server.server_close()

    sent = next(numbers) - 1
    assert found["answered"] + found["failures"].get("RemoteDisconnected", 0) == sent
    assert found["failures"]["RemoteDisconnected"] == sent // 5
    assert found["failures"]["503"] == len([n for n in range(1, sent + 1) if n % 3 == 0 and n % 5])
    assert found["not_ok"] == sum(found["failures"].values())
