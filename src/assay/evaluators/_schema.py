"""The ``schema`` evaluator: does the output's JSON satisfy a JSON Schema or a Pydantic model? Each violation
is named by its path, with the fix to make; output with no JSON in it fails as in ``json_match``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, field_validator, model_validator

from assay.errors import ConfigError
from assay.evaluators.base import Evaluator, Options
from assay.evaluators.jsonparse import Extract, Unparseable, json_path, kind, read_json_output, show
from assay.evaluators.registry import register
from assay.evaluators.structured import EXTRACT_DESCRIPTION, LIST_INDEX, MAX_FEEDBACK, not_json_verdict
from assay.verdict import Verdict

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError as SchemaViolation


class SchemaOptions(Options):
    """Options of schema: exactly one of ``json_schema`` (a JSON Schema dict) or ``model`` (a Pydantic class)."""

    json_schema: dict[str, Any] | bool | None = Field(
        None, description="the JSON Schema (draft 2020-12) the output's JSON must satisfy, written inline"
    )
    model: str | type[BaseModel] | None = Field(
        None,
        description="instead of json_schema, a Pydantic model class (or its path 'package.module:Model') the "
        "output's JSON must validate as",
    )
    check_formats: bool = Field(
        False,
        description="also enforce the schema's 'format' keywords (email, ipv4, date …, those jsonschema can check "
        "here), which JSON Schema otherwise treats as annotations",
    )
    extract: Extract = Field("anywhere", description=EXTRACT_DESCRIPTION)

    @field_validator("json_schema", mode="before")
    @classmethod
    def _schema_type(cls, value: Any) -> Any:
        if value is None or isinstance(value, dict | bool):
            return value
        raise ValueError("must be a JSON Schema: an object (dict) or a boolean")

    @field_validator("model", mode="before")
    @classmethod
    def _model_type(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip()):
            return value
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value
        raise ValueError("must be a Pydantic model class or its dotted path 'package.module:Model'")

    @model_validator(mode="after")
    def _exactly_one(self) -> SchemaOptions:
        if (self.json_schema is None) == (self.model is None):
            raise ValueError("set exactly one of 'json_schema' (a JSON Schema) and 'model' (a Pydantic model class)")
        if self.check_formats and self.model is not None:
            raise ValueError(
                "'check_formats' applies to 'json_schema' only; Pydantic models validate their own formats"
            )
        return self


@dataclass(frozen=True, slots=True)
class Violation:
    """One way the output breaks the schema: where, what, and what to do about it."""

    path: str
    message: str
    fix: str
    keyword: str


@register("schema")
class Schema(Evaluator):
    """Validates the output's JSON against a JSON Schema (draft 2020-12) or a Pydantic model; score 1 or 0.

    The score stays 1/0 (valid or not) because a share of satisfied constraints has no stable meaning across
    schemas; the reason lists every violation with its JSON path and the feedback what to fix.
    """

    Options = SchemaOptions
    options: SchemaOptions

    def setup(self) -> None:
        opts = self.options
        self.model_class: type[BaseModel] | None = None
        self.validator: Draft202012Validator | None = None
        if opts.model is not None:
            self.model_class = self._resolve_model(opts.model)
            return
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        schema = opts.json_schema
        assert schema is not None  # the options validator requires exactly one of json_schema and model
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as err:
            where = json_path(tuple(err.absolute_path))
            raise ConfigError(f"schema: option 'json_schema': invalid JSON Schema at {where}: {err.message}") from None
        checker = Draft202012Validator.FORMAT_CHECKER if opts.check_formats else None
        self.validator = Draft202012Validator(schema, format_checker=checker)

    @staticmethod
    def _resolve_model(model: str | type[BaseModel]) -> type[BaseModel]:
        if not isinstance(model, str):
            return model
        from assay.importing import import_object

        try:
            obj = import_object(model)
        except ValueError as err:
            raise ConfigError(f"schema: option 'model': {err}") from None
        if not (isinstance(obj, type) and issubclass(obj, BaseModel)):
            raise ConfigError(f"schema: option 'model': {model!r} is {kind(obj)}, not a Pydantic model class")
        return obj

    def check(self, actual: Any, expected: Any) -> Verdict:
        read = read_json_output(actual, self.name, self.options.extract, None)
        if isinstance(read, Unparseable):
            return not_json_verdict(read, None)
        value, source = read
        violations = self.violations(value)
        details: dict[str, Any] = {"json_source": source}
        if not violations:
            return Verdict.pass_(details=details)
        details["violations"] = [{"path": v.path, "message": v.message, "keyword": v.keyword} for v in violations]
        rules = (f"schema rule {v.keyword!r} broken at {LIST_INDEX.sub('[]', v.path)}" for v in violations)
        checks = list(dict.fromkeys(rules))
        details["check"], details["failed_checks"] = checks[0], checks[:MAX_FEEDBACK]
        n = len(violations)
        reason = f"{n} schema violation{'s' if n != 1 else ''}: " + "; ".join(
            f"{v.path}: {v.message}" for v in violations
        )
        fixes = [v.fix for v in violations[:MAX_FEEDBACK]]
        feedback = "Return JSON that satisfies the schema: " + "; ".join(fixes)
        if n > MAX_FEEDBACK:
            feedback += f"; and {n - MAX_FEEDBACK} more (see details['violations'])"
        return Verdict.fail(reason, feedback=feedback + ".", details=details)

    def violations(self, value: Any) -> list[Violation]:
        """Every violation of the schema by ``value``, ordered by path."""
        if self.model_class is not None:
            return _pydantic_violations(self.model_class, value)
        assert self.validator is not None
        found = [_jsonschema_violation(err) for err in self.validator.iter_errors(value)]
        return sorted(found, key=lambda v: v.path)

    def to_config(self) -> dict[str, Any]:
        """The config, with a model class as its dotted path; ConfigError if the class is not importable."""
        config: dict[str, Any] = {"name": self.name}
        if self.options.json_schema is not None:
            config["json_schema"] = self.options.json_schema
        model = self.options.model
        if model is not None:
            if not isinstance(model, str):
                from assay.importing import dotted_path

                try:
                    model = dotted_path(model)
                except ValueError as err:
                    raise ConfigError(f"schema: option 'model' cannot be saved in a config: {err}") from None
            config["model"] = model
        if self.options.check_formats:
            config["check_formats"] = True
        if self.options.extract != "anywhere":
            config["extract"] = self.options.extract
        return config

    def __repr__(self) -> str:
        target = self.model_class.__qualname__ if self.model_class else show(self.options.json_schema, 60)
        return f"Schema({'model' if self.model_class else 'json_schema'}={target})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Schema)
            and self.model_class is other.model_class
            and self.options.json_schema == other.options.json_schema
            and self.options.check_formats == other.options.check_formats
            and self.options.extract == other.options.extract
        )

    def __hash__(self) -> int:
        return hash((self.name, self.model_class))


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _jsonschema_violation(err: SchemaViolation) -> Violation:
    path = json_path(tuple(err.absolute_path))
    keyword = str(err.validator)
    value: Any = err.validator_value
    message = _clip(err.message)
    fix = f"fix {path}: {message}"
    if keyword == "required" and isinstance(err.instance, dict):
        missing = [k for k in value if k not in err.instance]
        fix = f"add the required propert{'ies' if len(missing) != 1 else 'y'} {', '.join(map(repr, missing))} at {path}"
    elif keyword == "type":
        fix = f"make {path} of type {' or '.join(value) if isinstance(value, list) else value}"
    elif keyword == "enum":
        fix = f"set {path} to one of {show(value, 120)}"
    elif keyword == "const":
        fix = f"set {path} to {show(value)}"
    elif keyword in _BOUNDS:
        fix = f"make {path} {_BOUNDS[keyword]} {value}"
    elif keyword == "pattern":
        fix = f"make {path} match the regular expression {value!r}"
    elif keyword == "format":
        fix = f"make {path} a valid {value}"
    elif keyword in ("additionalProperties", "unevaluatedProperties"):
        fix = f"remove the properties not allowed at {path} ({message})"
    return Violation(path, message, fix, keyword)


_BOUNDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "greater than",
    "exclusiveMaximum": "less than",
    "minLength": "a string of at least this many characters:",
    "maxLength": "a string of at most this many characters:",
    "minItems": "an array with at least this many items:",
    "maxItems": "an array with at most this many items:",
    "minProperties": "an object with at least this many properties:",
    "maxProperties": "an object with at most this many properties:",
}


def _pydantic_violations(model: type[BaseModel], value: Any) -> list[Violation]:
    from pydantic import ValidationError

    try:
        model.model_validate(value)
    except ValidationError as err:
        found = []
        for e in err.errors(include_url=False):
            path = json_path(tuple(p for p in e["loc"] if isinstance(p, str | int)))
            message = _clip(e["msg"])
            if e["type"] == "missing":
                fix = f"add the required field {path}"
            elif e["type"] == "extra_forbidden":
                fix = f"remove the field {path}"
            else:
                fix = f"fix {path}: {message}"
            found.append(Violation(path, message, fix, e["type"]))
        return found
    return []
