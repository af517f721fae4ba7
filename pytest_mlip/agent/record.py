"""The detective's reports as data: typed claims and fixed phrases, rendered by a template.

An escalation report (``escalation.json``) and the run's index report
(``detective.json``) hold no prose. Each is a list of blocks (headings,
paragraphs, list items, tables, the figure) whose content is a sequence of
*items*:

- ``phrase``: fixed wording, named by id in :data:`PHRASES` (or a law's
  ``phrases``, ``law:<check>:<key>``, see :mod:`.lawreport`); the record holds
  the id, never the words;
- ``name``: a model, contract, probe, file, run, ... printed in backticks;
  the judge checks it names what the run holds;
- ``value``: a number read from an artifact (quantity, printed text, unit,
  and the contract / model / probe it is about); the judge re-reads the
  artifact and requires the printed text at the report's precision, the
  artifact's unit and its context;
- ``verdict``: a verdict artifact's status, as a status word or as
  "violates / obeys the law";
- ``decision``, ``held``, ``expect``: the hypothesis' decision (escalate,
  reject, exhausted, and its type), whether each pre-registered prediction
  held and what it expected, read from the decision artifact, which the judge
  recomputes from the probe verdicts with the fixed rules of
  :mod:`.judgement`;
- ``text``: words a planner wrote (the hypothesis' statement and mechanism,
  the decision rule, a planner's confounds): data recorded by the run and
  sealed by the run artifact, cited numbers inside re-verified;
- ``law``: one of a law's phrases with tolerances filled in (its decision-table
  outcomes), each filled value a ``value`` item.

``notes`` hold the typed notes of :mod:`pytest_mlip.reporting.claims`
(typed records only: a free-text ``comment`` is refused). :func:`render_markdown`
writes report.md from a record; the judge does the same and compares.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..reporting.claims import ARTIFACT_ID, NUMBER_TEXT, UNIT

FORMAT = "pytest-mlip-agent-report"
VERSION = 1
ESCALATION_FILE = "escalation.json"
INDEX_FILE = "detective.json"
#: a name printed in backticks: anything but backticks, brackets and line breaks
NAME_TEXT = r"^[^`\[\]\n\r|]{1,300}$"
PHRASE_ID = r"^[A-Za-z0-9_.:-]{1,120}$"
#: what a ``code`` name may print (commands and paths the reports show, fixed by the tool)
CODE_NAMES = ("python reproduce.py", "pytest_mlip.testing.run_contract", "generated_tests/", "pytest --mlip=MODEL",
              "dft/vasp/<name>/", "dft/qe/<name>.pwi", "espresso-in", "./pseudo", "run.json")


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Phrase(_Item):
    k: Literal["phrase"]
    id: str = Field(pattern=PHRASE_ID)


class Name(_Item):
    k: Literal["name"]
    role: Literal["model", "contract", "protocol", "probe", "file", "run", "code_version", "key", "hypothesis",
                  "config", "evidence", "planner", "store", "code"]
    name: str = Field(pattern=NAME_TEXT)


class Value(_Item):
    k: Literal["value"]
    artifact: str = Field(pattern=ARTIFACT_ID)
    text: str = Field(pattern=NUMBER_TEXT + r"|^-?inf$|^nan$")
    unit: str = Field(pattern=UNIT)
    quantity: str = Field(pattern=r"^[A-Za-z0-9_ /^*.:-]{1,80}$")
    #: print the quantity's name before the number (False inside a table column that names it)
    label: bool = True
    contract: str | None = None
    model: str | None = None
    probe: str | None = None


class Verdict(_Item):
    k: Literal["verdict"]
    artifact: str = Field(pattern=ARTIFACT_ID)
    status: Literal["pass", "fail", "error", "skip"]
    form: Literal["status", "verdict", "law"] = "status"
    contract: str
    model: str


class Decision(_Item):
    k: Literal["decision"]
    artifact: str = Field(pattern=ARTIFACT_ID)
    hypothesis: str = Field(pattern=r"^H[0-9]{1,4}$")
    verdict: Literal["escalate", "reject", "exhausted"]
    type: Literal["exact-constraint violation", "cross-model disagreement", "none"]


class Held(_Item):
    k: Literal["held"]
    artifact: str = Field(pattern=ARTIFACT_ID)
    prediction: str
    held: Literal["yes", "no", "n/a"]


class Expect(_Item):
    k: Literal["expect"]
    artifact: str = Field(pattern=ARTIFACT_ID)
    prediction: str
    who: Literal["target", "committee", "kind"]
    expect: str = Field(pattern=r"^(fail|pass|any|scope|control|mechanism|impact)$")
    decades: float | None = None


class Text(_Item):
    k: Literal["text"]
    text: str = Field(min_length=1, max_length=2000)


class LawText(_Item):
    k: Literal["law"]
    law: str = Field(pattern=r"^[a-z_]{1,40}$")
    key: str = Field(pattern=PHRASE_ID)
    fill: dict[str, Value | None] = Field(default_factory=dict)


Item = Annotated[Union[Phrase, Name, Value, Verdict, Decision, Held, Expect, Text, LawText], Field(discriminator="k")]


class ModelRow(_Item):
    name: str = Field(pattern=NAME_TEXT)
    role: Literal["target", "committee"]
    version: str | None = None
    weights_hash: str | None = None


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Line(_Block):
    """A heading (h1-h3), paragraph (p), list item (li) or nested list item (li2)."""
    t: Literal["h1", "h2", "h3", "p", "li", "li2"]
    items: list[Item] = Field(min_length=1)


class Table(_Block):
    t: Literal["table"]
    head: list[list[Item]] = Field(min_length=1)
    rows: list[list[list[Item]]]


class Models(_Block):
    t: Literal["models"]
    models: list[ModelRow] = Field(min_length=1)


class Image(_Block):
    t: Literal["image"]
    file: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,80}\.png$")


Block = Annotated[Union[Line, Table, Models, Image], Field(discriminator="t")]


class Run(_Block):
    id: str
    code_version: str
    store: str


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    format: Literal["pytest-mlip-agent-report"]
    version: Literal[1]
    kind: Literal["escalation", "index"]
    #: the hypothesis an escalation report is about (None for the index)
    hypothesis: str | None = None
    run: Run
    blocks: list[Block] = Field(min_length=1)
    notes: list = Field(default_factory=list)


RECORD = TypeAdapter(Record)


# --- fixed wording ------------------------------------------------------------------------------------------------

#: every phrase the agent's reports print, by id (laws add theirs: laws/<law>/report.py)
PHRASES = {
    # headings
    "title.escalation": "Escalation report: ",
    "title.index": "Detective run on ",
    "on": " on ",
    "sec.finding": "Finding",
    "sec.type": "Type",
    "sec.impact": "Application failure and domain boundary",
    "sec.figure": "Figure",
    "sec.reproduction": "Minimal reproduction",
    "sec.dft": "DFT verification card",
    "sec.confounds": "Confounds closed",
    "sec.prereg": "Pre-registration and probes",
    "sec.hypotheses": "Hypotheses",
    "sec.evidence": "Evidence checked",
    "e.none": "No hypothesis was formed; the run rests on these verdicts:",
    "sec.escalations": "Escalation reports",
    "sec.files": "Files written",
    "sec.notes": "Notes",
    # header
    "h.run": "run: ",
    "h.code": "code version: ",
    "h.store": "provenance store: ",
    "h.hypothesis": "hypothesis: ",
    "h.planner": ", planner ",
    "h.decision": "verdict: ",
    "h.human": "; only the human verifier confirms or refutes",
    "h.committee": "; committee: ",
    "h.planner_index": "planner: ",
    "h.evidence": "evidence: ",
    "h.memory": "memory: ",
    "h.append_only": " (append-only)",
    "h.stopped": "stopped: ",
    "h.costs": "wall time, model evaluations and tokens: ",
    "comma": ", ",
    "semicolon": "; ",
    "colon": ": ",
    "period": ".",
    "open": " (",
    "close": ")",
    "space": " ",
    # finding
    "f.mechanism": "Suspected mechanism: ",
    "f.evidence": "Evidence the hypothesis started from:",
    "f.headline": "Headline, on pre-registered configurations never evaluated before the hypothesis was declared:",
    "probe": ", probe ",
    "key": "Key ",
    "started": "Started from ",
    # type
    "type.exact": "Exact-constraint violation. The law holds for the exact Born-Oppenheimer energy whatever the "
                  "reference method, so the violation is decisive on its own; verification supplies reference values "
                  "for the same configurations (to size the error), it does not decide whether the law holds.",
    "type.disagreement": "Cross-model disagreement. The target stands far from the committee but no exact law is "
                         "broken; the reference calculation decides the verdict.",
    # impact
    "i.none": "No scope protocol failed; nothing to bound.",
    "i.probe": "Impact probe ",
    "i.boundary": "Domain boundary (where the defect does not matter): ",
    "i.no_boundary": "none found by the impact probe",
    "i.impact_pass": "the application setting of ",
    "i.where_obeys": ", where the target ",
    "i.planner_boundary": "Planner's domain boundary: ",
    # figure
    "fig.bars": "Worst normalized violation v/tau per probe of the scope protocol for the target and committee (log "
                "scale); the dashed line is the tolerance (v/tau equal to one).",
    # reproduction
    "r.from": " (from this folder, with pytest-mlip installed) runs ",
    "r.scope": "the pre-registered scope protocol",
    "r.rest": " on the target and every committee model through ",
    "r.prints": " and prints each model's verdict, worst v/tau, worst probe and raw violation; it runs in minutes. The "
                "same file in ",
    "r.collected": " is collected by ",
    # dft card
    "d.none": "No scope protocol failed; no configurations to verify.",
    "d.compute": "Compute ",
    "d.points": " single points (estimated ",
    "d.hours": "; a rough scaling estimate, transition-metal spin states can cost more). Inputs, ready to "
               "run:",
    "d.extxyz_what": ": every configuration (info: name, probe, role, distance);",
    "d.vasp_what": ": POSCAR (written by ASE), INCAR, KPOINTS, and the POTCAR order in POTCAR.txt;",
    "d.qe_what": ": Quantum ESPRESSO input written by ASE (",
    "d.qe_rest": ") with its pseudopotential map (files expected in ",
    "d.qe_end": ").",
    "d.settings": "Settings: PBE, spin-polarised, Gaussian smearing, plane-wave cutoff and k-mesh as written in the "
                  "inputs (isolated systems in a vacuum box at the Gamma point).",
    "d.configuration": "configuration",
    "d.probe": "probe",
    "d.role": "role",
    "d.distance": "distance",
    "d.none_cell": "-",
    "d.table": "Decision table (from the pre-registration of this hypothesis):",
    "d.outcome": "reference outcome",
    "d.verdict": "verdict",
    "d.on_configs": ", on the configurations of ",
    "d.confirmed": "confirmed: the law holds and the target's violation is a model failure (as pre-registered for ",
    "d.refuted": "refuted: the protocol, not the model, is at fault; the generated test must be withdrawn",
    "d.control": "the reference obeys the law on the control ",
    "d.control_as": " (as the target does)",
    "d.no_change": "no change: the control stays a control",
    "d.unconverged": "the reference cannot be converged on these configurations (e.g. the shortest separations)",
    "d.undecided": "undecided: drop those points, keep the rest of the table",
    # confounds
    "c.sampling": "Sampling or discretisation artefact: with ",
    "c.still": " still ",
    "c.protocol": "A protocol artefact: the committee runs the identical protocol: ",
    "c.float32": "Float32 noise: the tolerance ",
    "c.float32_rest": " is at least three times the float32 noise measured on the shipped models; the target's ",
    "c.control": "A defect of every configuration: the pre-registered control ",
    "c.float64": "Float32 rounding in the model: its float64 channel, ",
    "c.float64_rest": ", on the same protocol: ",
    "c.sibling": "A fluke of one fit of the weights: a sibling of the same family, ",
    "c.sibling_rest": ", on the same protocol: ",
    "c.elements": "Unsupported elements: the validator admitted only elements every model lists as supported.",
    "c.planner": "Planner: ",
    # pre-registration
    "p.rule": "Decision rule: ",
    "p.protocol": "protocol",
    "p.kind": "kind",
    "p.target": "target expected",
    "p.committee": "committee expected",
    "p.observed": "target observed",
    "p.held": "held",
    "p.not_run": "not run",
    "p.per_probe": ": v/tau per probe",
    "p.probe": "probe",
    "p.skip": "skip",
    "p.none": "-",
    "p.disagreement": "; disagreement ",
    "p.decades": " decades",
    "role.target": " (target)",
    "role.committee": " (committee)",
    "role.extra": " (extra)",
    # index
    "x.probe": "probe ",
    "kind.scope": "scope",
    "kind.control": "control",
    "kind.mechanism": "mechanism",
    "kind.impact": "impact",
    "x.escalation": ": ",
    "x.report": "/report.md",
}


def phrase_text(pid: str) -> str:
    """The words of a phrase id (``law:<check>:<key>`` reads the law's phrases). KeyError for an unknown id."""
    if pid.startswith("law:"):
        from .lawreport import law_phrases

        _, check, key = pid.split(":", 2)
        return law_phrases(check)[key]
    return PHRASES[pid]


def load_record(text: str) -> Record:
    """A record from its JSON text: duplicate keys refused, every field validated (pydantic, strict)."""
    from ..reporting.report import loads_strict

    return RECORD.validate_python(loads_strict(text))


def dump_record(record: Record) -> str:
    return json.dumps(record.model_dump(mode="json", exclude_none=True), indent=1) + "\n"


def seal(record: Record) -> str:
    """The SHA-256 the run artifact keeps of a record: every item but the printed digits of values (a number
    printed more precisely than the report's default is still faithful, and the judge re-reads each one) and the
    notes (added afterwards, each checked on its own)."""
    data = record.model_dump(mode="json", exclude_none=True)
    data.pop("notes", None)

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if not (k == "text" and x.get("k") == "value")}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    blob = json.dumps(strip(data), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def items_of(record: Record):
    """Every item of a record, with the index of its block (values inside law phrases too)."""
    for i, b in enumerate(record.blocks):
        groups = []
        if isinstance(b, Line):
            groups = [b.items]
        elif isinstance(b, Table):
            groups = list(b.head) + [cell for row in b.rows for cell in row]
        for g in groups:
            for it in g:
                yield i, it
                if isinstance(it, LawText):
                    for v in it.fill.values():
                        if v is not None:
                            yield i, v
