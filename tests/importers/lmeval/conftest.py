"""Fixtures for the lm-eval importer tests: a tiny causal LM made offline (nothing is downloaded)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer GPT-2 with random weights and a locally trained tokenizer (assay.testing.tiny_lm)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import torch

    torch.set_num_threads(1)
    from assay.testing.tiny_lm import make_tiny_lm

    return make_tiny_lm(tmp_path_factory.mktemp("tiny") / "gpt2")


def lmeval_chat(base_url: str, task: str, work: Path) -> dict[str, Any]:
    """lm-eval itself on ``task`` (a task file under ``work``) against an OpenAI test server, through its
    local-chat-completions model, with its per-sample logs."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    return lm_eval.simple_evaluate(  # type: ignore[no-any-return]
        model="local-chat-completions",
        model_args=f"model=test-model,base_url={base_url}/chat/completions,num_concurrent=1,"
        "max_retries=1,tokenized_requests=False",
        tasks=[task],
        apply_chat_template=True,
        task_manager=TaskManager(include_path=str(work), include_defaults=False),
        log_samples=True,
    )


def reply(request: dict[str, Any]) -> str:
    text = request["messages"][-1]["content"]
    question = text.rsplit("Question: ", 1)[1]
    a, b = (int(x) for x in re.findall(r"\d+", question)[:2])
    if a % 3 == 0:
        return f"So {a} + {b} = {a + b + 1}.\n#### {a + b + 1} (1 try)"  # wrong; flexible's last match: one digit
    if a % 3 == 1:
        return f"He ends with {a + b} apples."  # right, but no '####': only flexible-extract finds it
    return f"{a} + {b} = {a + b}\n#### {a + b}"
