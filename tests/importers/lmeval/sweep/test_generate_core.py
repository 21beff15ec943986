"""Registry generation tasks, unchanged but for their data, asked of one scripted server by lm_eval and by assay:
``gsm8k`` with text prompts (lm_eval's local-completions, assay's openai-completions), and in chat mode with a
system instruction and the few-shot examples as turns (--apply_chat_template --fewshot_as_multiturn)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer
from tests.importers.lmeval.parity import assay_run, assert_parity, inside, lm_eval_generate, registry_copy

pytest.importorskip("lm_eval", reason="lm-eval is not installed")
pytest.importorskip("tenacity", reason="lm-eval's API models need lm-eval[api] (tenacity)")

ROWS = [
    {"question": f"Tom has {a} apples and buys {b} more. How many apples does he have?",
     "answer": f"{a}+{b}\n#### {a + b}"}
    for a, b in [(3, 4), (10, 5), (7, 8), (12, 30), (1, 1), (6, 9), (21, 2), (4, 4)]
]  # fmt: skip


def _answer(prompt: str) -> str:
    question = prompt.rsplit("Question: ", 1)[-1]
    a, b = (int(x) for x in re.findall(r"\d+", question)[:2])
    if a % 3 == 0:
        return f"So {a} + {b} = {a + b + 1}.\n#### {a + b + 1} (1 try)"
    if a % 3 == 1:
        return f"He ends with {a + b} apples."
    return f"{a} + {b} = {a + b}\n#### {a + b}"


def chat_reply(body: dict[str, Any]) -> str:
    return _answer(body["messages"][-1]["content"])


def completion(prompt: Any, body: dict[str, Any]) -> str:
    return _answer(str(prompt))


@pytest.mark.parametrize("chat", [False, True])
def test_gsm8k_equal_to_lm_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat: bool) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    path = registry_copy("gsm8k", tmp_path, {"train": ROWS, "test": ROWS})
    options: dict[str, Any] = {"num_fewshot": 3}
    if chat:
        options.update(apply_chat_template=True, fewshot_as_multiturn=True, system_instruction="Answer briefly.")
    with OpenAITestServer(chat_reply, completion=completion) as server, inside(tmp_path):
        provider = "openai" if chat else "openai-completions"
        model = {"provider": provider, "model": "test-model", "base_url": server.base_url}
        run_dir = assay_run([path], model, tmp_path, lmeval=options)
        theirs = lm_eval_generate(server.base_url, ["gsm8k"], tmp_path, chat=chat, **options)
    assert assert_parity(run_dir, theirs) == 2 * len(ROWS)
