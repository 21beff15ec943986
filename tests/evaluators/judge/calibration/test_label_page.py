"""`assay view RUN --label`: label in headless Chromium with the keyboard (label, reload, the labels file), and the
server's refusals over raw HTTP: a foreign Host, a POST without the page's token, a cross-site Origin."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.evaluators.judge.calibration.labels import run_labels
from assay.report.labelserver import label_items, serve_labels
from tests.evaluators.judge.calibration.calibration_support import judged_run, replier

EVIL = '<img src=x onerror="alert(1)">'


@pytest.fixture
def run(serve: Any, tmp_path: Path) -> Path:
    answers = {"s0": "a0", "s1": f"a1 {EVIL}", "s2": "a2"}
    return judged_run(tmp_path, serve(replier(lambda o, n: "pass" if o.startswith("a0") else "fail")), answers)


@pytest.fixture
def label_server(run: Path) -> Iterator[tuple[int, str]]:
    server, token = serve_labels(run, 0, who="ann")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server.server_address[1], token
    server.shutdown()
    server.server_close()


def _post(port: int, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = json.dumps(body).encode()
    conn.request("POST", "/label", data, {"Content-Type": "application/json", **headers})
    resp = conn.getresponse()
    return resp.status, resp.read().decode()


def test_label_with_the_keyboard_and_reload(watched: Any, run: Path, label_server: tuple[int, str]) -> None:
    port, _ = label_server
    url = f"http://127.0.0.1:{port}/"
    watched.load(url)
    page = watched.page
    assert page.text_content("#progress") == "1 of 3"
    assert page.text_content("#where").startswith("qa / s0 (repeat 0)")
    page.keyboard.press("p")
    page.wait_for_function("() => document.getElementById('status').textContent === 'saved'")
    page.keyboard.press("j")
    assert EVIL in page.text_content("#output")  # shown as text, never as markup
    assert page.query_selector("#output img") is None
    page.keyboard.press("n")
    page.keyboard.type("jp means pass")  # keys typed in the note are text, not commands
    page.keyboard.press("Enter")
    page.keyboard.press("f")
    page.wait_for_function("() => document.getElementById('status').textContent === 'saved'")
    page.keyboard.press("k")
    assert page.text_content("#mine") == "pass"
    watched.load(url)  # reloaded: the unlabelled output first, then the labelled ones with their labels
    assert page.text_content("#where").startswith("qa / s2")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.text_content("#where").startswith("qa / s1") and page.text_content("#mine") == "fail"
    assert page.input_value("#note") == "jp means pass"
    labels = [(lab.sample_id, lab.repeat, lab.metric, lab.label, lab.note, lab.who) for lab in run_labels(run)]
    assert labels == [("s0", 0, "llm_judge", "pass", "", "ann"), ("s1", 0, "llm_judge", "fail", "jp means pass", "ann")]
    assert watched.dialogs == [] and watched.errors == [] and watched.csp_violations() == []


def test_refusals_over_raw_http(run: Path, label_server: tuple[int, str]) -> None:
    port, token = label_server
    here = f"127.0.0.1:{port}"
    good = {"task": "qa", "sample_id": "s0", "repeat": 0, "metric": "llm_judge", "label": "pass"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/", headers={"Host": "evil.example"})
    assert conn.getresponse().status == 403
    assert _post(port, good, {"Host": here})[0] == 403  # no token: a cross-site form or fetch cannot know it
    assert _post(port, good, {"Host": here, "X-Assay-Token": token + "x"})[0] == 403
    assert _post(port, good, {"Host": "evil.example", "X-Assay-Token": token})[0] == 403
    assert _post(port, good, {"Host": here, "X-Assay-Token": token, "Origin": "http://evil.example"})[0] == 403
    status, text = _post(port, good | {"sample_id": "nope"}, {"Host": here, "X-Assay-Token": token})
    assert status == 400 and "no judged output" in text
    assert not (run / "labels.jsonl").exists()  # nothing refused was written
    assert _post(port, good, {"Host": here, "X-Assay-Token": token, "Origin": f"http://{here}"})[0] == 200
    assert [lab.label for lab in run_labels(run)] == ["pass"]


def test_assay_view_label_serves_the_page_and_refuses_two_runs(run: Path) -> None:
    """The command itself: it prints the URL, the page lists the run's judged outputs; usage errors exit 2."""
    import subprocess
    import urllib.request

    from tests.e2e.e2e_support import assay_cmd

    proc = subprocess.Popen(
        assay_cmd("view", str(run), "--label", "--who", "ann", "--port", "0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("Serving the labelling page of 1 run at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].split()[0]
        with urllib.request.urlopen(url, timeout=10) as resp:
            page = resp.read().decode()
            csp = resp.headers["Content-Security-Policy"]
        assert '"sample_id":"s1"' in page and EVIL not in page  # the output is in the data block, escaped
        assert "default-src 'none'" in csp and "unsafe-inline" not in csp
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    two = subprocess.run(assay_cmd("view", str(run), str(run), "--label"), capture_output=True, text=True)
    assert two.returncode == 2 and "--label labels one run folder" in two.stderr
    lone = subprocess.run(assay_cmd("view", str(run), "--who", "ann", "--port", "0"), capture_output=True, text=True)
    assert lone.returncode == 2 and "--who goes with --label" in lone.stderr


def test_outputs_where_the_judges_disagree_come_first_and_d_shows_only_them(
    watched: Any, serve: Any, tmp_path: Path
) -> None:
    """Two judges: judge-2 fails s2, which judge-1 passes. That output is listed first, says who said what, and
    `d` narrows the page to it (and back)."""
    from tests.evaluators.judge.judge_support import blocks, judge_spec

    def reply(request: dict[str, Any]) -> str:
        if request["model"] == "student":
            return request["messages"][-1]["content"].split("::")[-1]
        output = blocks(request)["response"]
        passed = output != "a0" and not (request["model"] == "judge-2" and output == "a2")
        return json.dumps({"explanation": "scripted", "label": "pass" if passed else "fail"})

    server = serve(reply)
    models = {"model": [judge_spec(server, "judge-1"), judge_spec(server, "judge-2")]}
    run = judged_run(tmp_path, server, {"s0": "a0", "s1": "a1", "s2": "a2"}, extra=models)
    items = label_items(run, "ann")
    assert items[0]["sample_id"] == "s2"
    assert items[0]["disagree"] == "judge-1 1, judge-2 0" and not any(it["disagree"] for it in items[1:])
    web, _ = serve_labels(run, 0, who="ann")
    thread = threading.Thread(target=web.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        watched.load(f"http://127.0.0.1:{web.server_address[1]}/")
        page = watched.page
        assert page.text_content("#where").startswith("qa / s2")
        assert page.text_content("#disagree") == "judges disagree: judge-1 1, judge-2 0"
        page.keyboard.press("d")
        assert page.text_content("#progress") == "1 of 1 where judges disagree"
        page.keyboard.press("j")  # nothing past it
        assert page.text_content("#where").startswith("qa / s2")
        page.keyboard.press("d")
        assert page.text_content("#progress") == "1 of 3"
        page.keyboard.press("j")
        assert page.text_content("#disagree") == ""
        assert watched.errors == [] and watched.csp_violations() == []
    finally:
        web.shutdown()
        web.server_close()


def _raw_post(port: int, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest("POST", "/label", skip_accept_encoding=True)
    for name, value in {"Content-Type": "application/json", **headers}.items():
        conn.putheader(name, value)
    conn.endheaders(body)
    resp = conn.getresponse()
    return resp.status, resp.read().decode()


def test_malformed_labels_get_a_400_and_nothing_is_written(
    run: Path, label_server: tuple[int, str], capsys: pytest.CaptureFixture[str]
) -> None:
    port, token = label_server
    auth = {"Host": f"127.0.0.1:{port}", "X-Assay-Token": token}
    good = '{"task": "qa", "sample_id": "s0", "metric": "llm_judge", '
    bad = [
        (good + '"repeat": 0, "label": "pass"}', {"Content-Length": "abc"}, "Content-Length"),
        (good + '"repeat": 1e999, "label": "pass"}', {}, "repeat"),
        (good + '"repeat": 0, "label": NaN}', {}, "NaN"),
        (good + '"repeat": 0, "label": 1e999}', {}, "finite"),
        (good + '"repeat": 0, "label": {"x": 1}}', {}, "object"),
        (good + '"repeat": 0, "label": ["pass"]}', {}, "list"),
    ]
    for body, extra, why in bad:
        data = body.encode()
        headers = {**auth, "Content-Length": str(len(data)), **extra}
        status, text = _raw_post(port, data, headers)
        assert status == 400 and why in text, (body, extra, status, text)
    assert not (run / "labels.jsonl").exists()
    # a client that closes before reading the reply: no traceback on the terminal
    import socket

    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"POST /label HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 100\r\n\r\n{{".encode())
    assert _post(port, {"task": "qa", "sample_id": "s0", "repeat": 0, "metric": "llm_judge", "label": "pass"},
                 auth)[0] == 200  # fmt: skip
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
