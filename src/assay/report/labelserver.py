"""``assay view RUN --label``: a page on 127.0.0.1 where a person labels a run's judged outputs, keyboard first.

j / k next and previous, p / f pass and fail, 1-9 a grade, d only where the judges disagree; the note field takes
text. The page lists the judged outputs of the run's judge metrics, unlabelled ones where the judges disagree first
(several judges on both sides of the pass threshold, repeated judgements that differ, a pairwise judge that flipped
with the order), then the other unlabelled ones, then those already labelled. Each label is a POST appended to
``RUN/labels.jsonl`` and nothing else is written. Requests whose ``Host`` is not this loopback address are refused
(DNS rebinding), and a POST must carry the page's token in ``X-Assay-Token`` (a random value only the served page
holds) with a JSON body and no foreign ``Origin``, so another site cannot label through the browser. The run's texts
reach the page as a JSON data block and are shown with ``textContent`` only: model outputs are untrusted.
"""

from __future__ import annotations

import hmac
import html
import json
import secrets
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from assay.errors import AssayError

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024
MAX_TEXT = 20_000

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>assay: label {title}</title>
<style nonce="{nonce}">
body {{ font: 15px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 60rem; }}
pre {{ white-space: pre-wrap; background: #f5f5f5; padding: .6rem; border-radius: 4px; }}
.label {{ font-weight: bold; }} .muted {{ color: #666; }} kbd {{ border: 1px solid #aaa; padding: 0 .3em; }}
</style></head>
<body>
<p class="muted"><kbd>j</kbd>/<kbd>k</kbd> next/previous, <kbd>p</kbd> pass, <kbd>f</kbd> fail,
<kbd>1</kbd>–<kbd>9</kbd> grade, <kbd>d</kbd> only where judges disagree. <span id="progress"></span></p>
<h2 id="where"></h2>
<p id="disagree" class="label"></p>
<h3>Input</h3><pre id="input"></pre>
<h3>Output</h3><pre id="output"></pre>
<p>Judge: <span id="judge"></span></p>
<p>Your label: <span id="mine" class="label"></span> <span id="status" class="muted"></span></p>
<p><label>Note <input id="note" size="60" maxlength="4000"></label></p>
<script type="application/json" id="items">{items}</script>
<script nonce="{nonce}">
const all = JSON.parse(document.getElementById('items').textContent);
const token = {token};
let items = all, at = 0;
const $ = id => document.getElementById(id);
function show() {{
  const it = items[at];
  if (!it) {{ $('where').textContent = 'nothing to label'; $('progress').textContent = ''; return; }}
  $('progress').textContent = (at + 1) + ' of ' + items.length + (items === all ? '' : ' where judges disagree');
  $('disagree').textContent = it.disagree ? 'judges disagree: ' + it.disagree : '';
  $('where').textContent = it.task + ' / ' + it.sample_id + ' (repeat ' + it.repeat + ') · ' + it.metric;
  $('input').textContent = it.input;
  $('output').textContent = it.output;
  $('judge').textContent = it.judge;
  $('mine').textContent = it.label === null ? '—' : String(it.label);
  $('note').value = it.note || '';
  $('status').textContent = '';
}}
async function give(label) {{
  const it = items[at];
  const body = {{task: it.task, sample_id: it.sample_id, repeat: it.repeat, metric: it.metric, label: label,
                note: $('note').value}};
  const r = await fetch('/label', {{method: 'POST', headers: {{'Content-Type': 'application/json',
                                   'X-Assay-Token': token}}, body: JSON.stringify(body)}});
  if (r.ok) {{ it.label = label; it.note = body.note; show(); $('status').textContent = 'saved'; }}
  else {{ $('status').textContent = 'not saved: ' + await r.text(); }}
}}
document.addEventListener('keydown', e => {{
  if (e.target === $('note')) {{ if (e.key === 'Escape' || e.key === 'Enter') $('note').blur(); return; }}
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === 'j') {{ at = Math.min(at + 1, items.length - 1); show(); }}
  else if (e.key === 'k') {{ at = Math.max(at - 1, 0); show(); }}
  else if (e.key === 'p') give('pass');
  else if (e.key === 'f') give('fail');
  else if (/^[1-9]$/.test(e.key)) give(Number(e.key));
  else if (e.key === 'n') {{ e.preventDefault(); $('note').focus(); }}
  else if (e.key === 'd') {{ items = items === all ? all.filter(it => it.disagree) : all; at = 0; show(); }}
}});
show();
document.body.dataset.ready = '1';
</script></body></html>
"""


def _clip(text: Any) -> str:
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "…"


def disagreement(details: Any) -> str:
    """How a verdict's judges disagree, in words; empty when they agree (or there was one judgement)."""
    if not isinstance(details, dict):
        return ""
    threshold = details.get("pass_threshold")
    per_judge = [j for j in details.get("per_judge") or [] if isinstance(j, dict) and "score" in j]
    if isinstance(threshold, int | float) and len(per_judge) > 1:
        sides = {j["score"] >= threshold for j in per_judge}
        if len(sides) > 1:
            return ", ".join(f"{j['model']} {j['score']:g}" for j in per_judge)
    spread = details.get("spread")
    if isinstance(spread, dict) and isinstance(threshold, int | float):
        low, high = spread.get("min"), spread.get("max")
        if isinstance(low, int | float) and isinstance(high, int | float) and low < threshold <= high:
            return f"repeated judgements from {low:g} to {high:g}"
    position = details.get("position")
    if isinstance(position, dict) and position.get("inconsistent"):
        return "the judge's preference flipped with the order of the responses"
    return ""


def label_items(run_dir: Path, who: str) -> list[dict[str, Any]]:
    """Every judged output of the run's judge metrics with ``who``'s latest label: unlabelled ones where the
    judges disagree first, then other unlabelled ones, then labelled ones."""
    from assay.evaluators.judge.calibration.collect import judge_metrics
    from assay.evaluators.judge.calibration.labels import latest, run_labels
    from assay.store.rundir import read_manifest
    from assay.store.sampleindex import index_samples, iter_dicts

    metrics = judge_metrics(read_manifest(run_dir))
    by_task: dict[str, list[str]] = {}
    for jm in metrics:
        by_task.setdefault(jm.task, []).append(jm.metric)
    mine = {key[:4]: lab for key, lab in latest(run_labels(run_dir)).items() if key[4] == who}
    found: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    for _, rec in iter_dicts(index_samples(run_dir)):
        task, sample_id = str(rec.get("task")), str(rec.get("sample_id"))
        for metric in by_task.get(task, []):
            fr = next((f for f in (rec.get("filters") or {}).values() if metric in (f.get("verdicts") or {})), None)
            if fr is None:
                continue
            filtered = fr.get("filtered")
            for j, verdict in enumerate(fr["verdicts"][metric]):
                output = filtered[j] if isinstance(filtered, list) and j < len(filtered) else filtered
                judged = (
                    "error: " + str(verdict["error"])
                    if verdict.get("error")
                    else (
                        f"{'pass' if verdict.get('passed') else 'fail'} (score {verdict.get('score')})"
                        + (f": {verdict['reason']}" if verdict.get("reason") else "")
                    )
                )
                lab = mine.get((task, sample_id, j, metric))
                found[(task, sample_id, j, metric)] = {
                    "task": task, "sample_id": sample_id, "repeat": j, "metric": metric,
                    "input": _clip(rec.get("prompt", "")), "output": _clip(output), "judge": _clip(judged),
                    "label": None if lab is None else lab.label, "note": "" if lab is None else lab.note,
                    "disagree": disagreement(verdict.get("details")),
                }  # fmt: skip
    return sorted(found.values(), key=lambda it: (it["label"] is not None, not it["disagree"]))


def make_handler(run_dir: Path, who: str, token: str, port_ref: list[int]) -> type[BaseHTTPRequestHandler]:
    """GET / the page (the run's items read afresh), POST /label one label; nothing else."""
    from assay.evaluators.judge.calibration.labels import append_labels, label_from
    from assay.report.html import embed_json

    known: set[tuple[str, str, int, str]] = set()  # so a POST does not re-read the whole run

    class Handler(BaseHTTPRequestHandler):
        server_version = "assay-label"
        sys_version = ""

        def _origin(self) -> set[str]:
            return {f"{HOST}:{port_ref[0]}", f"localhost:{port_ref[0]}"}

        def _send(self, status: int, body: bytes, content_type: str, csp: str | None = None) -> None:
            self.send_response(status)
            for name, value in (
                ("Content-Type", content_type),
                ("Content-Length", str(len(body))),
                ("Cache-Control", "no-store"),
                ("X-Content-Type-Options", "nosniff"),
                ("X-Frame-Options", "DENY"),
                ("Referrer-Policy", "no-referrer"),
                ("Cross-Origin-Resource-Policy", "same-origin"),
            ):
                self.send_header(name, value)
            if csp:
                self.send_header("Content-Security-Policy", csp)
            self.end_headers()
            self.wfile.write(body)

        def _refuse(self, status: int, why: str) -> None:
            self._send(status, f"{why}\n".encode(), "text/plain; charset=utf-8")

        def _host_ok(self) -> bool:
            return (self.headers.get("Host") or "").strip().lower() in self._origin()

        def do_GET(self) -> None:
            if not self._host_ok():
                return self._refuse(403, "forbidden: unexpected Host header")
            if self.path.split("?", 1)[0] not in ("/", "/index.html"):
                return self._refuse(404, "not found")
            try:
                items = label_items(run_dir, who)
                known.clear()  # the judged outputs a label may name, read afresh with every page
                known.update((it["task"], it["sample_id"], it["repeat"], it["metric"]) for it in items)
            except (AssayError, OSError) as err:
                return self._refuse(500, f"could not read the run: {err}")
            nonce = secrets.token_urlsafe(16)
            page = PAGE.format(
                title=html.escape(run_dir.name),
                nonce=nonce,
                items=embed_json(items),
                token=embed_json(token),
            )
            csp = (
                f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
                "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
            )
            self._send(200, page.encode(), "text/html; charset=utf-8", csp)

        def do_POST(self) -> None:
            if not self._host_ok():
                return self._refuse(403, "forbidden: unexpected Host header")
            origin = self.headers.get("Origin")
            if origin is not None and origin.lower().removeprefix("http://") not in self._origin():
                return self._refuse(403, "forbidden: a cross-site request")
            if not hmac.compare_digest(self.headers.get("X-Assay-Token") or "", token):
                return self._refuse(403, "forbidden: no valid page token")
            if self.path != "/label":
                return self._refuse(404, "not found")
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
                return self._refuse(415, "expected application/json")
            try:
                size = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                return self._refuse(400, "bad request: Content-Length is not a whole number")
            if not 0 < size <= MAX_BODY:
                return self._refuse(413, "a label is at most 64 KiB")
            try:
                obj = json.loads(self.rfile.read(size), parse_constant=_no_constant)
                if not isinstance(obj, dict):
                    raise ValueError("expected a JSON object")
                lab = label_from({**obj, "who": who, "when": None}, "POST /label")
                if not known:  # a POST before any page was served
                    known.update(
                        (it["task"], it["sample_id"], it["repeat"], it["metric"]) for it in label_items(run_dir, who)
                    )
                if lab.key not in known:
                    raise ValueError(f"no judged output {lab.key} in this run")
                append_labels(run_dir, [lab])
            except (AssayError, ValueError, OverflowError, TypeError) as err:
                return self._refuse(400, f"bad label: {err}")
            self._send(200, b'{"ok": true}', "application/json")

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the terminal shows the URL, not every request."""

    return Handler


def _no_constant(name: str) -> Any:
    """JSON's non-standard NaN / Infinity refused: a label is stored as JSON, which has no such numbers."""
    raise ValueError(f"{name} is not a JSON number")


class _QuietServer(ThreadingHTTPServer):
    """The label server: a client that goes away mid-request (a closed tab) is no error worth a traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


def serve_labels(run_dir: Path, port: int = 0, who: str = "") -> tuple[ThreadingHTTPServer, str]:
    """A labelling server for ``run_dir`` on 127.0.0.1 (not started) and its page token."""
    label_items(run_dir, who)  # a run without judge metrics fails before serving
    token = secrets.token_urlsafe(24)
    port_ref = [port]
    server = _QuietServer((HOST, port), make_handler(run_dir, who, token, port_ref))
    port_ref[0] = server.server_address[1]
    return server, token
