"""What one reference page holds (:class:`Entry`), and its Markdown."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OptionDoc:
    """One option: its name as written in a task file or on the command line, its type, default and meaning."""

    name: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class Entry:
    """One reference page: a name, a one-line summary, longer text, and its options."""

    kind: str  # "evaluator", "filter step", "model kind", "command"
    name: str
    summary: str
    text: str = ""
    options: list[OptionDoc] = field(default_factory=list)
    usage: str = ""  # a command's usage line or a YAML example

    def markdown(self, heading: str = "#") -> str:
        """The page as Markdown (a heading, the summary, the text, an options table)."""
        parts = [f"{heading} `{self.name}`", "", self.summary]
        if self.usage:
            parts += ["", "```", self.usage, "```"]
        if self.text:
            parts += ["", self.text]
        if self.options:
            parts += ["", f"{heading}# Options", "", "| option | type | default | meaning |", "|---|---|---|---|"]
            parts += [
                f"| `{o.name}` | {_cell(o.type)} | {_cell(o.default)} | {_cell(o.description) or '—'} |"
                for o in self.options
            ]
        return "\n".join(parts) + "\n"


def _cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell (pipes escaped, lines joined)."""
    return " ".join(text.replace("|", "\\|").split())
