"""The report's server: the HTML report of one or more runs on 127.0.0.1 (never on other interfaces), for
``assay view``.

The page is the same one ``assay report --html`` writes. It is rendered again when a run folder changes
(a run still in progress shows its new samples on reload). Requests whose ``Host`` is not this loopback
address are refused, so a web page elsewhere cannot read the report through DNS rebinding. The labelling page's
server (``assay view --label``) is beside it in :mod:`assay.report.labelserver`.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from assay.errors import AssayError
from assay.report.pageselect import MAX_PAGE_SAMPLES

HOST = "127.0.0.1"
DEFAULT_PORT = 8765
WATCHED = ("run.json", "samples.jsonl", "results.json")


class ReportPage:
    """The rendered page, cached until a watched file of a run folder changes."""

    def __init__(self, run_dirs: list[Path], max_samples: int | None = MAX_PAGE_SAMPLES) -> None:
        self.run_dirs = run_dirs
        self.max_samples = max_samples
        self._lock = threading.Lock()
        self._signature: tuple[Any, ...] | None = None
        self._html = b""

    def signature(self) -> tuple[Any, ...]:
        """(mtime, size) of every watched file: changes when a run writes a sample or its results."""
        out: list[Any] = []
        for root in self.run_dirs:
            for name in WATCHED:
                try:
                    st = (root / name).stat()
                    out.append((st.st_mtime_ns, st.st_size))
                except OSError:
                    out.append(None)
        return tuple(out)

    def html(self) -> bytes:
        """The page, rendered again only when a run folder changed since the last request."""
        from assay.report.html import render_html

        with self._lock:
            sig = self.signature()
            if sig != self._signature:
                self._html = render_html(self.run_dirs, max_samples=self.max_samples).encode("utf-8")
                self._signature = sig
            return self._html


def make_handler(page: ReportPage, port_ref: list[int]) -> type[BaseHTTPRequestHandler]:
    """A request handler serving ``page`` at ``/`` and nothing else."""
    from assay.report.html import page_csp

    class Handler(BaseHTTPRequestHandler):
        server_version = "assay-view"
        sys_version = ""

        def _host_ok(self) -> bool:
            host = (self.headers.get("Host") or "").strip().lower()
            return host in {f"{HOST}:{port_ref[0]}", f"localhost:{port_ref[0]}"}

        def _send(self, status: int, body: bytes, content_type: str, head_only: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cross-Origin-Resource-Policy", "same-origin")
            if content_type.startswith("text/html"):
                self.send_header("Content-Security-Policy", page_csp() + "; frame-ancestors 'none'")
            self.end_headers()
            if not head_only:
                self.wfile.write(body)

        def _serve(self, head_only: bool) -> None:
            if not self._host_ok():
                self._send(403, b"forbidden: unexpected Host header\n", "text/plain; charset=utf-8", head_only)
                return
            path = self.path.split("?", 1)[0]
            if path not in ("/", "/index.html"):
                self._send(404, b"not found\n", "text/plain; charset=utf-8", head_only)
                return
            try:
                body = page.html()
            except (AssayError, OSError, ValueError) as err:
                message = f"could not render the report: {err}\n".encode()
                self._send(500, message, "text/plain; charset=utf-8", head_only)
                return
            self._send(200, body, "text/html; charset=utf-8", head_only)

        def do_GET(self) -> None:
            self._serve(head_only=False)

        def do_HEAD(self) -> None:
            self._serve(head_only=True)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the terminal shows the URL, not every request."""

    return Handler


def serve(
    run_dirs: list[Path], port: int = DEFAULT_PORT, max_samples: int | None = MAX_PAGE_SAMPLES
) -> ThreadingHTTPServer:
    """A server for the report of ``run_dirs`` bound to 127.0.0.1 (``port`` 0 picks a free one); not started.
    The page holds at most ``max_samples`` samples of each run (0 or None: all)."""
    page = ReportPage(run_dirs, max_samples)
    page.html()  # render once now, so a broken run folder fails before serving
    port_ref = [port]
    server = ThreadingHTTPServer((HOST, port), make_handler(page, port_ref))
    server.daemon_threads = True
    port_ref[0] = server.server_address[1]
    return server
