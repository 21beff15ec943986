"""Shared data for the task tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"

ROWS: list[dict[str, Any]] = [
    {"question": "Capital of France?", "answer": "Paris", "subject": "geo"},
    {"question": "2 + 2?", "answer": "4", "subject": "math"},
    {"question": "Author of Hamlet?", "answer": "Shakespeare", "subject": "lit"},
    {"question": "Symbol for gold?", "answer": "Au", "subject": "chem"},
    {"question": "Legs of a spider?", "answer": "8", "subject": "bio"},
]
