"""Jinja2 prompt templates: sandboxed, strict about undefined variables, errors naming the template.

A task may ask for another dialect of templates (``template_dialect``): ``promptfoo`` renders as promptfoo's nunjucks
environment does (its getNunjucksEngine), in the same sandbox and limits: an undefined name renders as empty text
(also ``x.y`` of one, and a loop over one runs no times), a value is written as JavaScript writes it (null as empty
text, true/false, ``1`` for 1.0, a list joined by commas, ``[object Object]``), the ``load`` filter is JSON.parse and
``dump`` JSON.stringify, and the global ``env`` is the process environment (unless PROMPTFOO_DISABLE_TEMPLATE_ENV_VARS
or PROMPTFOO_SELF_HOSTED is set) under the overrides the task gives (a promptfoo config's ``env``). An assay task's
own templates stay strict, and never see the environment."""

from __future__ import annotations

import copyreg
import json
import keyword
import math
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError

if TYPE_CHECKING:
    import jinja2

# What one render of a template may build: a task file is input, and ``{{ 'a' * 10**10 }}`` must fail, not hang.
MAX_BUILD = 1_000_000  # characters of a string, or items of a list, one expression may build
MAX_OUTPUT = 4_000_000  # characters of a rendered prompt (about a million tokens, past any context window)
MAX_LOOP_ITEMS = 1_000_000  # loop iterations of one render, nested loops counted together
MAX_INT_BITS = 100_000  # bits of an integer ``**`` may produce
_LOOP = "__assay_bounded_loop__"
_budget: ContextVar[list[int] | None] = ContextVar("assay_template_budget", default=None)
_WIDTH = re.compile(r"%[-+ #0]*(\d*)(?:\.(\d+))?|\{[^{}]*:[^{}]*?(\d+)(?:\.(\d+))?[^{}]*\}")


class TemplateLimitError(Exception):
    """A template tried to build more than the limits above allow."""


def _limit(what: str, size: int, limit: int) -> None:
    if size > limit:
        raise TemplateLimitError(f"the template builds {what} of {size:,} (the limit is {limit:,})")


def _check_widths(fmt: str) -> None:
    """A printf or str.format pattern whose field width or precision alone is past the limit."""
    for match in _WIDTH.finditer(fmt):
        for group in match.groups():
            if group:
                _limit("a formatted field with a width", int(group), MAX_BUILD)


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, str | list | tuple) else None


def _check_binop(operator: str, left: Any, right: Any) -> None:
    if operator == "*":
        for seq, n in ((left, right), (right, left)):
            size = _size(seq)
            if size is not None and isinstance(n, int) and not isinstance(n, bool):
                _limit("a repetition with a length", size * max(n, 0), MAX_BUILD)
    elif operator == "+":
        a, b = _size(left), _size(right)
        if a is not None and b is not None:
            _limit("a concatenation with a length", a + b, MAX_BUILD)
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            _limit("a power with a number of bits", int(right * math.log2(abs(left))), MAX_INT_BITS)
    elif operator == "%" and isinstance(left, str):
        _check_widths(left)


def _check_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """String methods that build large strings from small arguments (``'a'.ljust(10**10)``)."""
    obj = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format
    owner = getattr(obj, "__self__", None)
    if not isinstance(owner, str):
        return
    name = getattr(obj, "__name__", "")
    if name in ("ljust", "rjust", "center", "zfill") and args and isinstance(args[0], int):
        _limit("a padded string with a length", args[0], MAX_BUILD)
    elif name == "expandtabs":
        tab = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(tab, int):
            _limit("an expanded string with a length", len(owner) + owner.count("\t") * tab, MAX_BUILD)
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        count = owner.count(args[0]) if args[0] else len(owner) + 1
        _limit("a replaced string with a length", len(owner) + count * max(0, len(args[1]) - len(args[0])), MAX_BUILD)
    elif name == "join" and args and isinstance(args[0], list | tuple):
        total = sum(len(x) for x in args[0] if isinstance(x, str)) + len(owner) * max(0, len(args[0]) - 1)
        _limit("a joined string with a length", total, MAX_BUILD)
    elif name in ("format", "format_map"):
        _check_widths(owner)


def _bounded_loop(iterable: Iterable[Any]) -> Iterator[Any]:
    """Every ``{% for %}`` iterates through here: the render's iterations are counted against MAX_LOOP_ITEMS."""
    budget = _budget.get()
    if budget is None:
        yield from iterable
        return
    for item in iterable:
        budget[0] -= 1
        if budget[0] < 0:
            raise TemplateLimitError(f"the template's loops run more than {MAX_LOOP_ITEMS:,} times in one prompt")
        yield item


def _bounded_filter(name: str, original: Any) -> Any:
    def bounded(value: Any, *args: Any, **kwargs: Any) -> Any:
        if name in ("center", "indent") and args and isinstance(args[0], int):
            _limit(f"a {name} filter with a width", args[0], MAX_BUILD)
        elif name == "format" and isinstance(value, str):
            _check_widths(value)
        elif name == "tojson":
            indent = args[0] if args else kwargs.get("indent")
            if isinstance(indent, int):
                _limit("a tojson filter with an indent", indent, 64)
        elif name == "replace" and len(args) >= 2 and isinstance(value, str):
            _check_call(value.replace, tuple(map(str, args[:2])), {})
        return original(value, *args, **kwargs)

    bounded.__name__ = getattr(original, "__name__", name)
    return bounded


def _tojson(value: Any, indent: int | None = None) -> str:
    # Jinja's own tojson escapes <, >, & and ' for HTML; a prompt wants the JSON as is.
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The shared environment: sandboxed (a task file cannot reach Python internals), StrictUndefined,
    trailing newlines kept, no HTML escaping, and a ``tojson`` filter that writes plain JSON."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        """The sandbox, also bounding what an expression may build (see MAX_BUILD and friends)."""

        intercepted_binops = frozenset({"*", "+", "**", "%"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            _check_call(__obj, args, kwargs)
            return super().call(__context, __obj, *args, **kwargs)

    env = BoundedSandbox(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    env.filters["tojson"] = _tojson
    for name in ("center", "indent", "format", "tojson", "replace"):
        env.filters[name] = _bounded_filter(name, env.filters[name])
    env.globals[_LOOP] = _bounded_loop
    return env


PROMPTFOO = "promptfoo"
DIALECTS = ("jinja", PROMPTFOO)  # "jinja": assay's own (strict); see the module's docstring for promptfoo's


def _js_text(value: Any) -> Any:
    """What nunjucks writes for a ``{{ }}`` value (its suppressValue and JavaScript's String): null and undefined as
    empty text, booleans lower case, a whole float without its ``.0``, a list joined by commas, an object as
    ``[object Object]``; anything else as Jinja writes it."""
    import jinja2

    if value is None or isinstance(value, jinja2.Undefined):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, Mapping):
        return "[object Object]"
    if isinstance(value, list | tuple):
        return ",".join(str(_js_text(v)) for v in value)
    return value


def _load(value: Any) -> Any:
    """promptfoo's ``load`` filter: JSON.parse of the text."""
    return json.loads(value if isinstance(value, str) else str(_js_text(value)))


def _dump(value: Any, spaces: Any = None) -> str:
    """nunjucks' ``dump`` filter: JSON.stringify(value, null, spaces) (spaces clamped to 10, as JavaScript does)."""
    import jinja2

    if isinstance(value, jinja2.Undefined):
        return ""
    indent = min(spaces, 10) if isinstance(spaces, int) and not isinstance(spaces, bool) and spaces > 0 else None
    seps = (",", ":") if indent is None else (",", ": ")
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=seps, default=str)


@lru_cache(maxsize=1)
def promptfoo_environment() -> jinja2.Environment:
    """The promptfoo dialect: the shared sandbox (its limits included) with nunjucks' undefined, output and
    promptfoo's filters (see the module's docstring); ``env`` is a global of each template (:func:`template_env`)."""
    import jinja2

    base = environment()
    env = base.overlay(undefined=jinja2.ChainableUndefined, finalize=_js_text)
    env.filters = dict(base.filters)  # an overlay shares its parent's dicts: these are the dialect's own
    env.globals = dict(base.globals)
    env.filters["load"] = _load
    env.filters["dump"] = _dump
    return env


def template_env(overrides: Mapping[str, str]) -> dict[str, str]:
    """promptfoo's ``env`` global: the process environment (unless promptfoo's switches hide it) under ``overrides``."""
    hidden = any(
        os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "yup", "yeppers")
        for name in ("PROMPTFOO_DISABLE_TEMPLATE_ENV_VARS", "PROMPTFOO_SELF_HOSTED")
    )
    return {**({} if hidden else dict(os.environ)), **overrides}


@dataclass(frozen=True, eq=False)
class Template:
    """A compiled template with the names it reads from its context.

    The Jinja form of a template that :meth:`Plain.scan` recognises without Jinja is compiled when first needed
    (a render Jinja must decide, an error's line): a task of such templates does not import Jinja to start a run.
    """

    label: str  # where it was written, e.g. "task.yaml:8: template"
    source: str
    variables: frozenset[str]
    plain: Plain | None = None  # set for a template of literal text and ``{{ name }}`` alone
    dialect: str | None = None  # None: assay's own; PROMPTFOO: promptfoo's nunjucks (see the module's docstring)
    env: tuple[tuple[str, str], ...] = ()  # the promptfoo dialect's overrides of its ``env`` global
    # the compiled template and a dict of its globals, once made
    _jinja: list[tuple[jinja2.Template, dict[str, Any]]] = field(default_factory=list, repr=False)

    @property
    def compiled(self) -> jinja2.Template:
        return self._compiled()[0]

    @property
    def globals(self) -> dict[str, Any]:
        return self._compiled()[1]

    @property
    def compiled_globals(self) -> dict[str, Any]:
        """The globals once Jinja has compiled the template, else none: a plain template is read without Jinja
        until something needs it, and a name found nowhere then goes to Jinja (which looks in its globals)."""
        return self._jinja[0][1] if self._jinja else {}

    def _compiled(self) -> tuple[jinja2.Template, dict[str, Any]]:
        if not self._jinja:
            compiled = _jinja_compile(self.source, self.label, self.dialect, dict(self.env))[0]
            self._jinja.append((compiled, dict(compiled.globals)))
        return self._jinja[0]

    def render(self, context: dict[str, Any]) -> str:
        """Render; errors (undefined variables included) propagate as Jinja2 exceptions.

        A plain template is rendered without Jinja: each name's value is looked up as the compiled template looks
        it up (the context, then the globals) and put in by ``str``, as its code does. Anything else (a name
        that is missing, a prompt past MAX_OUTPUT) goes through Jinja, which raises its own error.
        """
        if self.plain is not None:
            # before Jinja is needed there are no globals to look in: a name not in the context goes to Jinja
            text = self.plain.render(context, self.compiled_globals)
            if text is not None:
                return text
        return self._render_jinja(context)

    def _render_jinja(self, context: dict[str, Any]) -> str:
        """Builds the Jinja context from a plain dict of the template globals: ``Template.render`` merges them
        from a ChainMap on every call, which made it 4x slower for the short templates prompts are."""
        from jinja2.runtime import Context

        compiled = self.compiled
        ctx = Context(compiled.environment, {**self.globals, **context}, compiled.name, compiled.blocks)
        token = _budget.set([MAX_LOOP_ITEMS])
        try:
            pieces: list[str] = []
            size = 0
            for piece in compiled.root_render_func(ctx):
                size += len(piece)
                if size > MAX_OUTPUT:
                    raise TemplateLimitError(f"the rendered prompt is longer than {MAX_OUTPUT:,} characters")
                pieces.append(piece)
            return "".join(pieces)
        finally:
            _budget.reset(token)


@dataclass(frozen=True, slots=True)
class Plain:
    """A template made only of literal text and ``{{ name }}``, rendered without Jinja: each name looked up as the
    compiled template looks it up (the context, then the globals) and put in by ``str``, as its code does."""

    pieces: tuple[str | tuple[str], ...]  # literal text (as the lexer left it) or a name (a 1-tuple)
    missing: Any  # Jinja's sentinel for a name that resolves to nothing (a sentinel of ours for a scanned one)

    @classmethod
    def of(cls, ast: Any) -> Plain | None:
        """The plain form of a parsed template (newlines normalised, whitespace control applied), or None when it
        holds anything but literal text and ``{{ name }}`` (filters, attributes, tags, ``self``)."""
        from jinja2 import nodes
        from jinja2.utils import missing

        if not isinstance(ast, nodes.Template):
            return None
        pieces: list[str | tuple[str]] = []
        for node in ast.body:
            if not isinstance(node, nodes.Output):
                return None
            for child in node.nodes:
                if type(child) is nodes.TemplateData:
                    pieces.append(child.data)
                elif type(child) is nodes.Name and child.ctx == "load" and child.name != "self":  # self: the template
                    pieces.append((child.name,))
                else:
                    return None
        return cls(tuple(pieces), missing)

    @classmethod
    def scan(cls, source: str) -> Plain | None:
        """The plain form of the simplest templates, found without Jinja: literal text holding no brace and no
        carriage return, and ``{{ name }}`` tags of a name between spaces (not a keyword, a Jinja constant or
        ``self``). The pieces are those :meth:`of` finds in Jinja's parse of the same source; anything else is
        None, left to Jinja."""
        if "\r" in source:
            return None
        pieces: list[str | tuple[str]] = []
        pos = 0
        for tag in _SIMPLE_TAG.finditer(source):
            text, name = source[pos : tag.start()], tag.group(1)
            if "{" in text or "}" in text or name in _NOT_NAMES:
                return None
            if text:
                pieces.append(text)
            pieces.append((name,))
            pos = tag.end()
        rest = source[pos:]
        if "{" in rest or "}" in rest:
            return None
        if rest:
            pieces.append(rest)
        return cls(tuple(pieces), _ABSENT)

    def render(self, context: dict[str, Any], globals_: dict[str, Any]) -> str | None:
        """The text, or None where Jinja must decide: a name that resolves to nothing (or to Jinja's ``missing``),
        a value whose ``str`` raises, a text past MAX_OUTPUT."""
        absent = self.missing
        out: list[str] = []
        try:
            for piece in self.pieces:
                if isinstance(piece, str):
                    out.append(piece)
                    continue
                name = piece[0]
                value = context[name] if name in context else globals_.get(name, absent)
                if type(value) is not str:
                    if value is absent or value is _jinja_missing():
                        return None
                    value = str(value)
                out.append(value)
        except Exception:
            return None
        text = "".join(out)
        return text if len(text) <= MAX_OUTPUT else None


_SIMPLE_TAG = re.compile(r"\{\{[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\}\}")
_NOT_NAMES = frozenset(keyword.kwlist) | {"true", "false", "none", "self"}  # Jinja parses these otherwise
_ABSENT = object()


def _jinja_missing() -> Any:
    """Jinja's ``missing`` sentinel, when Jinja is loaded (before, no value can be it)."""
    return getattr(sys.modules.get("jinja2.utils"), "missing", _ABSENT)


def compile_template(
    source: str, label: str, dialect: str | None = None, env: Mapping[str, str] | None = None
) -> Template:
    """Compile ``source``; a syntax error raises ConfigError ``<label>: syntax error on template line N: ...``.

    A template :meth:`Plain.scan` recognises is not compiled by Jinja until Jinja is needed (start-up time).
    ``dialect`` ``promptfoo`` (with ``env``, its ``env`` global's overrides) renders as promptfoo does; its
    templates always go through Jinja (their values are written as JavaScript writes them)."""
    if dialect in (None, "jinja"):
        plain = Plain.scan(source)
        if plain is not None:
            return Template(label, source, frozenset(p[0] for p in plain.pieces if isinstance(p, tuple)), plain)
        compiled, variables, plain = _jinja_compile(source, label)
        return Template(label, source, variables, plain, _jinja=[(compiled, dict(compiled.globals))])
    if dialect != PROMPTFOO:
        raise ConfigError(f"{label}: unknown template dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    overrides = tuple(sorted((str(k), str(v)) for k, v in (env or {}).items()))
    compiled, variables, _ = _jinja_compile(source, label, dialect, dict(overrides))
    return Template(label, source, variables, None, dialect, overrides, [(compiled, dict(compiled.globals))])


def _jinja_compile(
    source: str, label: str, dialect: str | None = None, overrides: Mapping[str, str] | None = None
) -> tuple[jinja2.Template, frozenset[str], Plain | None]:
    """Jinja's compiled template of ``source``, the names it reads and its plain form, if it has one."""
    import jinja2
    from jinja2 import meta, nodes

    promptfoo = dialect == PROMPTFOO
    env = promptfoo_environment() if promptfoo else environment()
    try:
        ast = env.parse(source)
        variables = frozenset(meta.find_undeclared_variables(ast))
        plain = Plain.of(ast)
        for loop in ast.find_all(nodes.For):  # count every loop's iterations (MAX_LOOP_ITEMS)
            bound = nodes.Name(_LOOP, "load", lineno=loop.lineno)
            loop.iter = nodes.Call(bound, [loop.iter], [], None, None, lineno=loop.lineno)
        compiled = env.from_string(ast, globals={"env": template_env(overrides or {})} if promptfoo else None)
    except jinja2.TemplateSyntaxError as err:
        raise ConfigError(f"{label}: template syntax error on template line {err.lineno}: {err.message}") from None
    return compiled, variables, plain


def template_line(err: BaseException, template: Template) -> int | None:
    """The line of ``template`` that was rendering when ``err`` was raised, from its traceback."""
    line = None
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = template.compiled.get_corresponding_lineno(tb.tb_lineno)
        tb = tb.tb_next
    return line


def describe_render_error(err: Exception, template: Template, context: dict[str, Any]) -> str:
    """What went wrong rendering ``template``, with the available variables and a did-you-mean for typos."""
    import jinja2

    from assay.tasks.taskfile import did_you_mean

    if isinstance(err, jinja2.UndefinedError):
        missing = sorted(v for v in template.variables if v not in context)
        names = sorted(k for k in context if isinstance(k, str))
        if missing:
            hint = did_you_mean(missing[0], names)
            return (
                f"undefined variable {missing[0]!r}{hint}; available: {', '.join(names)} "
                f"(the row's fields, doc, input, target, metadata, fewshot)"
            )
        return f"{err.message or err}; available variables: {', '.join(names)}"
    if isinstance(err, TemplateLimitError | OverflowError | MemoryError):
        line = template_line(err, template)
        where = f" on template line {line}" if line is not None else ""
        return f"template limit exceeded{where}: {err}"
    if isinstance(err, jinja2.TemplateError):
        return f"template error: {err.message or err}"
    return f"template raised {type(err).__name__}: {err}"


def _pickled(template: Template) -> tuple[Any, ...]:
    """A template pickles as its source, compiled again when loaded (a compiled Jinja template does not pickle),
    so a task's prompt can go to other processes (Ray workers render predictions runs' prompts)."""
    if template.dialect is not None:
        return compile_template, (template.source, template.label, template.dialect, dict(template.env))
    return compile_template, (template.source, template.label)


copyreg.pickle(Template, _pickled)
