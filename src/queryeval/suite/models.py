"""Typed test cases (pydantic).

The schema is seed 000's YAML test case: ``id``, ``name``, ``tags``, ``comments`` and a
``conversation`` of turns ``{role, content, target}``. ``target`` is the one place where every
task kind puts its ground truth; this module defines ``indicator_selection`` (seed 000). Other
task kinds add their own optional key to :class:`Target`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    field_validator,
    model_validator,
)

_STRICT = ConfigDict(extra="forbid", coerce_numbers_to_str=True, str_strip_whitespace=False)


def _no_password(value: str) -> str:
    from queryeval.io.urls import PASSWORD_HINT, has_password

    if has_password(value):
        raise ValueError(PASSWORD_HINT)
    return value


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"must be a number, got {str(value).lower()}")
    return value


Tolerance = Annotated[float | None, BeforeValidator(_not_a_boolean)]
"""A numeric tolerance: a number, never a boolean (pydantic reads ``true`` as 1.0, which
made ``rel_tol: true`` a tolerance of 100 %)."""

RunTolerance = Annotated[float, BeforeValidator(_not_a_boolean)]
"""A task option's tolerance (``--option abs_tol=...``): the same rule, no null."""

DataSource = Annotated[str, AfterValidator(_no_password)]
"""Where queries run (files, an endpoint, a database URL): it is written to the run log and
the reports, so a URL carrying a password is refused (one check for cases and options)."""


class Term(BaseModel):
    """One term of a dimension, matched on the exact ``(id, name)`` pair."""

    model_config = _STRICT

    id: str = Field(description="Term code, e.g. an SDMX code such as 'LP' or 'MEX'.")
    name: str = Field(description="Term name, e.g. 'Mexico'.")

    def key(self) -> tuple[str, str]:
        return (self.id, self.name)


class DimensionSelection(BaseModel):
    model_config = _STRICT

    dimension_name: str = Field(description="Dimension, e.g. INDICATOR or COUNTRY.")
    values: list[Term] = Field(default_factory=list)

    @field_validator("values", mode="before")
    @classmethod
    def _none_is_empty(cls, v):
        return [] if v is None else v


class DatasetSelection(BaseModel):
    model_config = _STRICT

    dataset_id: str = Field(description="Dataset identifier, e.g. 'IMF.RES:WEO'.")
    dimensions: list[DimensionSelection] = Field(default_factory=list)

    @field_validator("dimensions", mode="before")
    @classmethod
    def _none_is_empty(cls, v):
        return [] if v is None else v


IndicatorSelection = list[DatasetSelection]


class AnswerItem(BaseModel):
    """One closed-form sub-answer (seed 001): ``@name[value]`` in a response."""

    model_config = _STRICT

    name: str = Field(pattern=r"^\w+$", description="Answer name, word characters only.")
    value: str = Field(description="Expected value, compared as text or as a number.")


class RelevantChunk(BaseModel):
    """One relevant chunk of a retrieval question: identified by its content's MD5 when
    ``content_hash`` is given (the seed's rule), by ``chunk_id`` otherwise; ``relevance`` is
    its graded gain (1 = relevant)."""

    model_config = _STRICT

    chunk_id: str = ""
    content_hash: str = Field(default="", pattern=r"^([0-9a-fA-F]{32})?$")
    relevance: StrictInt = Field(default=1, ge=0, le=2**31 - 1)
    """An integer gain (not true/2.0: the CSV refuses them too); trec_eval's range."""

    @model_validator(mode="after")
    def _identified(self) -> RelevantChunk:
        if not self.chunk_id and not self.content_hash:
            raise ValueError("a relevant chunk needs a chunk_id or a content_hash")
        return self


class RetrievalTarget(BaseModel):
    """Seed 002: the chunk(s) that answer the question. The seed's one chunk is
    ``content_hash`` (MD5 hex of its content) and/or ``chunk_id``; several (graded) relevant
    chunks are listed in ``relevant``."""

    model_config = _STRICT

    content_hash: str = Field(
        default="", pattern=r"^([0-9a-fA-F]{32})?$",
        description="MD5 hex digest of the expected chunk's content (UTF-8).")
    chunk_id: str = ""
    document_name: str = ""
    dataset: str = ""
    answer: str = ""
    relevant: list[RelevantChunk] | None = Field(
        default=None, description="Several relevant chunks, each {chunk_id, content_hash?, "
        "relevance?}; when given, content_hash/chunk_id above are not used.")

    @model_validator(mode="after")
    def _identified(self) -> RetrievalTarget:
        if not self.relevant and not self.content_hash and not self.chunk_id:
            raise ValueError("retrieval needs content_hash, chunk_id or relevant")
        return self


class ReferenceAnswer(BaseModel):
    """A free-form answer's reference (task ``freeform``): the answer, accepted aliases,
    numeric tolerances and the unit the numbers are in."""

    model_config = _STRICT

    answer: str = Field(description="The reference answer.")
    aliases: list[str] = Field(default_factory=list, description="Other accepted answers.")
    abs_tol: Tolerance = Field(default=None, ge=0, allow_inf_nan=False)
    rel_tol: Tolerance = Field(default=None, ge=0, allow_inf_nan=False)
    unit: str | None = Field(default=None, description="Unit of the reference's numbers "
                             "(pint syntax, e.g. 'km', 'USD' is not a unit).")

    @field_validator("answer", "aliases", mode="before")
    @classmethod
    def _yaml_dates(cls, v):
        """YAML reads ``answer: 2024-02-01`` as a date: keep it as its ISO text."""
        import datetime as dt

        if isinstance(v, list):
            return [x.isoformat() if isinstance(x, (dt.date, dt.datetime)) else x for x in v]
        return v.isoformat() if isinstance(v, (dt.date, dt.datetime)) else v

    @field_validator("unit")
    @classmethod
    def _known_unit(cls, v: str | None) -> str | None:
        """A unit pint does not read stops the suite where it is written (file, line)."""
        if v is not None:
            from queryeval.metrics.freeform.units import parse_unit

            if parse_unit(v) is None:
                raise ValueError(f"{v!r} is not a unit pint knows (pint syntax: km, kg, degC)")
        return v

    @model_validator(mode="after")
    def _tolerance_needs_a_number(self) -> ReferenceAnswer:
        """A tolerance applies only to an answer that is one number (with an optional unit
        or ``%``): on any other answer it would be silently ignored."""
        if self.abs_tol is None and self.rel_tol is None:
            return self
        from queryeval.metrics.freeform.ladder import reference_number

        if reference_number(self.answer, self.unit) is None:
            given = "abs_tol" if self.abs_tol is not None else "rel_tol"
            raise ValueError(
                f"{given} applies to a numeric answer, but answer {self.answer!r} is not one "
                "number with an optional unit pint knows or % (docs/freeform.md): give the "
                "number as the answer (its unit in `unit`), or drop the tolerance")
        return self


class GoldTable(BaseModel):
    """Seed 003: a gold result given as a table instead of a query."""

    model_config = _STRICT

    columns: list[str] = Field(min_length=1, description="Column names.")
    rows: list[list[str | None]] = Field(description="Rows of cells (null: unbound / NULL).")

    @model_validator(mode="after")
    def _widths(self) -> GoldTable:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"row {i} has {len(row)} cells for {len(self.columns)} columns")
        return self


class QueryTarget(BaseModel):
    """Seed 003: the gold query whose result table a predicted query should reproduce."""

    model_config = _STRICT

    gold: str = Field(min_length=1, description="The gold SPARQL or SQL query.")
    language: Literal["sparql", "sql"] | None = Field(
        default=None, description="Inferred from the source when left out.")
    source: DataSource | None = Field(
        default=None,
        description="Where to run it: RDF file(s) (comma-separated), a SPARQL endpoint URL, "
        "a .sqlite/.db or .duckdb file. Relative paths are relative to the suite file; "
        "default: the run's --graph/--database/--endpoint.")
    alternatives: list[str] = Field(
        default_factory=list, description="Further gold queries; the best-matching gold counts.")
    gold_tables: list[GoldTable] = Field(
        default_factory=list, description="Further gold results given as tables.")
    ordered: bool | None = Field(
        default=None, description="Whether row order counts; default: the gold query has a "
        "top-level ORDER BY.")
    abs_tol: Tolerance = Field(default=None, ge=0, allow_inf_nan=False, description="Numeric tolerance, absolute.")
    rel_tol: Tolerance = Field(default=None, ge=0, lt=1, allow_inf_nan=False,
                                  description="Numeric tolerance, relative (below 1).")
    columns: list[str] | None = Field(
        default=None, min_length=1, description="Gold columns that must be matched; the "
        "others are optional.")


class Target(BaseModel):
    """Ground truth of one user turn. Each task kind owns one key."""

    # The built-in kinds own the fields below; a registered task (``qe.register_task``, an
    # entry point) owns one more key, its ``target_key`` or its name, validated by its
    # ``target_model`` (``_registered_target``); any other key is refused. The published
    # schema lists the built-in keys only (closed, so an editor flags a typo).
    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True,
                              str_strip_whitespace=False,
                              json_schema_extra={"additionalProperties": False})

    @model_validator(mode="after")
    def _registered_keys(self) -> Target:
        extra = self.__pydantic_extra__
        for key in list(extra or ()):
            extra[key] = _registered_target(key, extra[key])  # type: ignore[index]
        return self

    indicator_selection: list[DatasetSelection] | None = Field(
        default=None,
        description="Seed 000: the terms the system should select, per dataset and dimension. "
        "An empty list (or no key) means the system should select nothing.",
    )

    answers: list[AnswerItem] | None = Field(
        default=None,
        description="Seed 001: closed-form answers, a list of {name, value} or a mapping "
        "name -> value; a repeated name keeps its last value.",
    )

    @field_validator("answers", mode="before")
    @classmethod
    def _answers_mapping(cls, v):
        if isinstance(v, dict):
            return [{"name": k, "value": val} for k, val in v.items()]
        return v

    retrieval: RetrievalTarget | None = Field(
        default=None, description="Seed 002: the chunk a retriever should find.")

    fields: dict[str, list[str] | str] | None = Field(
        default=None,
        description="Seed 004: the values a retriever must find, per field: a list of values, "
        "or one ';'-separated string (\"';\" is a literal ';'), split when read.",
    )

    @field_validator("fields", mode="after")
    @classmethod
    def _split_fields(cls, v):
        if v is None:
            return v
        from queryeval.metrics.fields import split_ground_truth

        for name in v:
            if not name.strip():
                raise ValueError("field names must not be empty")
        return {k: split_ground_truth(x) if isinstance(x, str) else list(x) for k, x in v.items()}

    query: QueryTarget | None = Field(
        default=None, description="Seed 003: the gold query of a text-to-query case.")

    reference: ReferenceAnswer | None = Field(
        default=None, description="A free-form answer's reference (task freeform).")

    def task_kinds(self) -> set[str]:
        """The task kinds of the keys this target sets (present, even if empty); a registered
        task's key names that task."""
        kinds = {KEY_TASKS.get(k, k) for k in self.model_fields_set if k in TASK_KEYS}
        return kinds | {_REGISTERED_KEYS.get(k, k) for k in self.__pydantic_extra__ or ()}


_REGISTERED_KEYS: dict[str, str] = {}
"""Target key -> the registered task that owns it (filled as keys are validated)."""


def _registered_target(key: str, value: Any) -> Any:
    """``value`` validated by the ``target_model`` of the registered task that owns ``key``
    (its ``target_key``, or its name when it sets none). A key no registered task owns, or
    whose task declares no ``target_model``, is an error naming the key."""
    from pydantic import ValidationError

    from queryeval.errors import ConfigError
    from queryeval.registry import TASKS

    owner = None
    try:
        task = TASKS.get(key)
        if (getattr(task, "target_key", None) or task.name) == key:
            owner = task
    except ConfigError:
        pass
    for name in TASKS.names() if owner is None else ():  # a target_key that is not its name
        if name in TASKS.builtins:
            continue  # the built-in kinds own the declared fields
        try:
            task = TASKS.get(name)
        except ConfigError:
            continue  # an installed task that fails to load owns nothing
        if getattr(task, "target_key", None) == key:
            owner = task
            break
    model = getattr(owner, "target_model", None)
    if owner is None or model is None:
        why = (f"task {owner.name!r} declares no target_model" if owner is not None
               else f"the keys are {', '.join(TASK_KEYS)}, or a registered task's")
        raise ValueError(f"unknown target key {key!r} ({why})")
    try:
        validated = _adapter(model).validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in (key, *first["loc"]))
        raise ValueError(f"target.{where}: {first['msg']}") from None
    _REGISTERED_KEYS[key] = owner.name
    return validated


def _adapter(model: Any) -> Any:
    """One pydantic ``TypeAdapter`` per target model (building one costs far more than a
    validation, and a suite validates one value a case)."""
    from pydantic import TypeAdapter

    try:
        return _ADAPTERS[model]
    except KeyError:
        adapter = _ADAPTERS[model] = TypeAdapter(model)
        return adapter
    except TypeError:  # an unhashable type: built each time
        return TypeAdapter(model)


_ADAPTERS: dict[Any, Any] = {}


TASK_KEYS = ("indicator_selection", "answers", "retrieval", "query", "fields", "reference")
KEY_TASKS = {"reference": "freeform"}
"""A target key whose task kind has another name (every other key names its task)."""


class Turn(BaseModel):
    model_config = _STRICT

    role: Literal["user", "assistant", "system"]
    content: str
    target: Target | None = Field(
        default=None,
        description="Ground truth for this user turn; a user turn with a target is scored.",
    )

    @model_validator(mode="after")
    def _target_only_on_user(self) -> Turn:
        if self.target is not None and self.role != "user":
            raise ValueError("only user turns can carry a target")
        return self


class Case(BaseModel):
    """One test case: a conversation whose user turns may carry ground truth."""

    model_config = ConfigDict(
        extra="forbid",
        coerce_numbers_to_str=True,
        json_schema_extra={"title": "queryeval test case"},
    )

    id: str = Field(min_length=1, description="Unique case id (a UUID in seed 000).")
    name: str = ""
    tags: list[str] = Field(default_factory=list)
    comments: str = ""
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Task context that is not ground truth, e.g. for answers: concepts, "
        "level, constraints, format, file_name.",
    )
    cluster: str = Field(
        default="",
        description="The cluster the case belongs to (cases sharing a source file, document, "
        "building or conversation): intervals and compares resample and test whole clusters. "
        "Blank: the case is its own cluster.")
    conversation: list[Turn] = Field(min_length=1)

    @field_validator("name", "comments", "cluster", mode="before")
    @classmethod
    def _none_is_blank(cls, v):
        return "" if v is None else v

    @field_validator("metadata", mode="before")
    @classmethod
    def _none_is_no_metadata(cls, v):
        return {} if v is None else v

    @field_validator("tags", mode="before")
    @classmethod
    def _none_is_no_tags(cls, v):
        return [] if v is None else v

    @model_validator(mode="after")
    def _has_user_turn(self) -> Case:
        if not any(t.role == "user" for t in self.conversation):
            raise ValueError("conversation has no user turn")
        return self

    def with_cluster_by(self, field: str) -> Case:
        """This case with its cluster read from ``--cluster-by FIELD``: the metadata value
        ``metadata[FIELD]`` when it is a text or number, else the value of its first tag
        ``FIELD:VALUE``, else unchanged (its own ``cluster:``, or its own cluster)."""
        value = self.metadata.get(field)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == "":
            prefix = f"{field}:"
            value = next((t[len(prefix):] for t in self.tags
                          if t.startswith(prefix) and len(t) > len(prefix)), None)
        if value is None:
            return self
        return self.model_copy(update={"cluster": str(value)})

    def scored_turns(self) -> list[int]:
        """Indices (into ``conversation``) of user turns that carry a target."""
        return [i for i, t in enumerate(self.conversation) if t.role == "user" and t.target is not None]

    def task_kinds(self) -> set[str]:
        kinds: set[str] = set()
        for i in self.scored_turns():
            kinds |= self.conversation[i].target.task_kinds()  # type: ignore[union-attr]
        return kinds


def case_json_schema() -> dict:
    """JSON Schema of one case document, for editors (yaml-language-server) and tools."""
    schema = Case.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://queryeval.dev/schema/case.json"
    return schema
