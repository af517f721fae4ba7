"""An LLM planner: Claude acts only through five typed tools; fixed code does everything else.

The model never writes code and never runs anything. It proposes a
hypothesis (``propose_hypothesis``), pre-registers predictions whose
protocols are contract tables (``preregister``; each goes through the
validator gate), asks for pre-registered probes to be run
(``request_probe``), renders a verdict (``render_verdict``: escalate or
reject, checked against the rules) and names the protocols to keep
(``write_protocol``). Every tool input carries a ``reason`` and a
``context``. Numbers in its free text must cite the artifact they come from
(``VALUE [e:N]`` with the handles it was shown); a number that cites nothing,
cites an unknown handle, or does not match its artifact's value is refused
and the model is asked again. Token usage is summed from each response.

The client is the ``anthropic`` SDK; tests pass one whose HTTP client
replays recorded responses (``httpx.MockTransport``).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..errors import MlipError
from .planner import NoProtocol, Planner, WritePlan
from .playbook import playbook_for
from .schema import AgentVerdict, Hypothesis, Prediction, Preregistration, Scope

DEFAULT_MODEL = "claude-opus-5"
MAX_ATTEMPTS = 3
MAX_TOKENS = 4096

_COMMON = {
    "reason": {"type": "string", "minLength": 1, "maxLength": 2000,
               "description": "why this action, citing numbers as VALUE [e:N]"},
    "context": {"type": "string", "minLength": 1, "maxLength": 2000,
                "description": "what in the evidence or memory this action builds on"},
}
_SCOPE = {"type": "object", "properties": {k: {"type": "array", "items": {"type": "string"}}
                                           for k in ("elements", "sites", "structures", "conditions")},
          "additionalProperties": False}

TOOLS = [
    {"name": "propose_hypothesis",
     "description": "Propose the single next failure hypothesis about the target, conditioned on the evidence and "
                    "the memory. Numbers in text must be written as VALUE [e:N].",
     "input_schema": {"type": "object", "properties": {
         "statement": {"type": "string"}, "check": {"type": "string"}, "contract": {"type": "string"},
         "basis": {"type": "string", "enum": ["exact", "disagreement"]}, "scope": _SCOPE,
         "mechanism": {"type": "string"}, "importance": {"type": "number", "minimum": 0, "maximum": 1},
         "severity": {"type": "number", "minimum": 0}, **_COMMON},
         "required": ["statement", "check", "contract", "scope", "mechanism", "importance", "severity", "reason",
                      "context"]}},
    {"name": "preregister",
     "description": "Pre-register, before any probe runs, the expected outcome of protocols not yet evaluated. "
                    "Each protocol is one contract table (data: the check's fields, structures, tolerances).",
     "input_schema": {"type": "object", "properties": {
         "hypothesis": {"type": "string"},
         "predictions": {"type": "array", "minItems": 1, "maxItems": 6, "items": {"type": "object", "properties": {
             "name": {"type": "string"}, "kind": {"type": "string", "enum": ["scope", "control", "mechanism",
                                                                               "impact"]},
             "target": {"type": "string", "enum": ["fail", "pass", "any"]},
             "committee": {"type": "string", "enum": ["fail", "pass", "any"]},
             "rationale": {"type": "string"}, "protocol": {"type": "object"},
             "excess_decades": {"type": "number", "minimum": 0, "maximum": 12,
                                "description": "optional: the target's v/tau at least this many decades above the "
                                               "committee median"},
             "above_band": {"type": "boolean",
                            "description": "optional, for a scope protocol: the target's v/tau above one and above "
                                           "the committee band by more than the committee's own spread (how a "
                                           "disagreement law such as dimer_tail escalates without a decade)"}},
             "required": ["name", "kind", "target", "committee", "protocol"]}}, **_COMMON},
         "required": ["hypothesis", "predictions", "reason", "context"]}},
    {"name": "request_probe",
     "description": "Ask for one pre-registered protocol to be run on the target and every committee model.",
     "input_schema": {"type": "object", "properties": {"hypothesis": {"type": "string"},
                                                       "protocol": {"type": "string"}, **_COMMON},
                      "required": ["hypothesis", "protocol", "reason", "context"]}},
    {"name": "render_verdict",
     "description": "Render escalate or reject for the hypothesis against its pre-registration (there is no "
                    "confirm). Numbers must cite handles.",
     "input_schema": {"type": "object", "properties": {
         "hypothesis": {"type": "string"}, "verdict": {"type": "string", "enum": ["escalate", "reject"]},
         "reasons": {"type": "array", "items": {"type": "string"}}, "domain_boundary": {"type": "string"},
         "confounds": {"type": "array", "items": {"type": "string"}, "maxItems": 5}, **_COMMON},
         "required": ["hypothesis", "verdict", "reasons", "reason", "context"]}},
    {"name": "write_protocol",
     "description": "Keep pre-registered protocols as a regression-test file generated_tests/mlip_<slug>.toml.",
     "input_schema": {"type": "object", "properties": {
         "hypothesis": {"type": "string"}, "slug": {"type": "string"},
         "protocols": {"type": "array", "items": {"type": "string"}, "minItems": 1}, **_COMMON},
         "required": ["hypothesis", "slug", "protocols", "reason", "context"]}},
]


def system_prompt(desk) -> str:
    from ..laws import CHECKS
    from .validator import open_checks

    lines = [
        "You are the Detective of pytest-mlip: you search for failure modes of a machine-learning interatomic "
        "potential (the target) that benchmarks miss, and escalate the most suspicious one to a human verifier.",
        "You act only through the tools. You never write code: protocols are contract tables (data) that fixed "
        "check routines interpret, and a validator refuses anything else.",
        "Rules: one hypothesis at a time; before any probe, pre-register the expected outcome per model on "
        "configurations not yet evaluated (target fail, committee pass, controls pass); the identical protocol "
        "runs on the target and every committee model; an exact-constraint violation is decisive on its own, "
        "committee disagreement only allocates suspicion; if every model violates a protocol, the protocol is "
        "suspect; your verdicts are escalate or reject, never confirm.",
        "Every number you write in free text must be followed by the handle of the artifact it comes from, as "
        "VALUE [e:N], printed with at least three significant digits; write identifiers (elements, formulas, "
        "probe and contract names) as given.",
        f"Target: {desk.target}. Committee: {', '.join(desk.committee) or 'none'}.",
        "Inspection specification (the checks you may use):",
    ]
    domains = open_checks()
    for name, cls in sorted(CHECKS.items()):
        if name not in domains:
            continue
        fields = {k: str(f.annotation) for k, f in cls.Settings.model_fields.items()
                  if k not in ("description",)}
        book = playbook_for(name)
        lines.append(f"- {name}: {cls.statement} Threshold: {cls.threshold} Table fields: "
                     f"{json.dumps(fields)}; admissible ranges: {json.dumps(domains[name])}; default tolerance "
                     f"{json.dumps(cls.Settings.default_tolerance)} (never tighter). Playbook: units a scope varies "
                     f"are the items of {', '.join(book.unit_fields)}; mechanisms by variant: "
                     f"{json.dumps(book.mechanisms)}.")
    return "\n".join(lines)


def playbook_suggestions(desk, h: Hypothesis) -> list[Prediction]:
    """The predictions the law's playbook derives for ``h`` from the target's evidence on its contract (the rules
    the offline planner follows), each already through the validator: shown to the model when it pre-registers,
    to adopt, adapt or ignore. Empty when the evidence names no failing unit of the contract."""
    from .planner import OfflinePlanner, slugify

    book = playbook_for(h.check)
    settings = desk.suite.get(h.contract)
    e = next((x for x in desk.evidence if x.contract == h.contract and x.model == desk.target_name
              and x.role == "target"), None)
    if book is None or settings is None or e is None:
        return []
    table, failing, passing, claim, clean = OfflinePlanner()._classes(e, settings)
    if not failing:
        return []
    preds = book.predictions(desk, h, table, settings, failing, passing, claim, clean, slugify(f"{h.id}-{h.contract}"),
                             False)
    return [p for p in preds if p is not None and desk.validator.protocol(p.protocol, where=p.name).ok]


class AnthropicPlanner(Planner):
    name = "anthropic"

    def __init__(self, client, model: str = DEFAULT_MODEL, max_tokens: int = MAX_TOKENS, log=None):
        super().__init__()
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.messages: list[dict] = []
        self.pending: list[dict] = []
        self.system: str | None = None
        self.log = log or (lambda msg: None)
        self.requested: dict[str, str] = {}  # protocol name -> tool_use id of its request_probe
        self.refusals: list[str] = []

    @classmethod
    def from_environment(cls, model: str | None = None):
        try:
            import anthropic
        except ImportError:
            raise MlipError("--planner anthropic needs the anthropic package: pip install 'pytest-mlip[agent]'") \
                from None
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise MlipError("--planner anthropic needs ANTHROPIC_API_KEY in the environment (or use --planner "
                            "offline)")
        return cls(anthropic.Anthropic(), model=model or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL)

    # --- conversation ------------------------------------------------------------------------------------------
    def _ask(self, desk, text: str, tool: str | None) -> list:
        """Send pending tool results plus ``text``; return the tool_use blocks of the reply."""
        if self.system is None:
            self.system = system_prompt(desk)
        content = list(self.pending) + [{"type": "text", "text": text}]
        self.pending = []
        self.messages.append({"role": "user", "content": content})
        kwargs = {"tool_choice": {"type": "tool", "name": tool}} if tool else {"tool_choice": {"type": "any"}}
        try:
            resp = self.client.messages.create(model=self.model, max_tokens=self.max_tokens, system=self.system,
                                               tools=TOOLS, messages=self.messages, **kwargs)
        except Exception as exc:
            import anthropic

            if isinstance(exc, anthropic.APIError):
                raise MlipError(f"the Anthropic API call failed ({type(exc).__name__}: {str(exc)[:200]}); check "
                                "ANTHROPIC_API_KEY and the network, or use --planner offline") from None
            raise
        self.usage.add(resp.usage)
        blocks = [b.model_dump() if hasattr(b, "model_dump") else dict(b) for b in resp.content]
        self.messages.append({"role": "assistant", "content": [_clean_block(b) for b in blocks]})
        return [b for b in blocks if b.get("type") == "tool_use"]

    def _result(self, block: dict, text: str, error: bool = False):
        self.pending.append({"type": "tool_result", "tool_use_id": block["id"], "content": text,
                             **({"is_error": True} if error else {})})

    def _loop(self, desk, text: str, tool: str, handle) -> Any:
        """Ask until ``handle(block)`` accepts a call to ``tool`` (it returns (value, None) or (None, errors))."""
        prompt = text
        for _ in range(MAX_ATTEMPTS):
            calls = self._ask(desk, prompt, tool)
            accepted, value = False, None
            for b in calls:
                if b["name"] != tool:
                    self._result(b, f"this step takes {tool}, not {b['name']}", error=True)
                    continue
                if accepted:
                    self._result(b, "one call is enough; ignored", error=True)
                    continue
                errors = _common_errors(b["input"]) or []
                if not errors:
                    value, errors = handle(b)
                self._audit(desk, tool, b, errors)
                if errors:
                    msg = "refused: " + "; ".join(errors)
                    self.refusals.append(f"{tool}: {msg}")
                    self.log(f"  {self.name} planner: {tool} {msg[:300]}")
                    self._result(b, msg, error=True)
                else:
                    accepted = True
            if accepted:
                return value
            prompt = f"Call {tool} again with the errors fixed."
        raise MlipError(f"the {self.name} planner gave no acceptable {tool} call in {MAX_ATTEMPTS} attempts: "
                        + (self.refusals[-1] if self.refusals else "no tool call"))

    def _audit(self, desk, tool: str, block: dict, errors: list[str] | None):
        """Every tool call, accepted or refused, goes to the memory (inputs carry their reason and context)."""
        desk.memory.append("planner", {"planner": self.name, "model": self.model, "tool": tool,
                                       "tool_use_id": block.get("id"), "input": block.get("input"),
                                       "accepted": not errors, "errors": list(errors or [])},
                           run=getattr(desk, "run_id", None))

    # --- what the planner is shown ---------------------------------------------------------------------------------
    def _known(self, desk) -> list[str]:
        names = [desk.target, desk.target_name, *desk.committee]
        for e in desk.evidence:
            names += [e.contract, e.model, *e.probes.keys()]
        for r in desk.memory.records("probe"):
            names += [r["data"]["name"]] + [p for o in r["data"]["outcomes"] for p in o["probes"]]
        return names

    def _evidence_text(self, desk) -> str:
        led = desk.ledger
        lines = ["Evidence (contract verdicts; v/tau above one violates the tolerance):"]
        for e in desk.evidence:
            mn = e.artifacts.get("max_normalized")
            head = f"- {e.contract} ({e.check}) on {e.model} [{e.role}]: {e.status}"
            if mn:
                head += f", max v/tau {_fmt(led.value(mn))} [{led.handle(mn)}]"
            lines.append(head)
            for p in e.failing_probes()[:6]:
                aid = (e.artifacts.get("probes") or {}).get(p)
                if aid:
                    lines.append(f"    probe {p}: v/tau {_fmt(led.value(aid))} [{led.handle(aid)}]")
        hyps = desk.memory.hypotheses()
        if hyps:
            lines.append("Memory (settled hypotheses; do not repeat their keys):")
            for h in hyps.values():
                lines.append(f"- {h['id']} [{h['key']}] {h.get('status')}: {h['statement'][:300]} -- "
                             + "; ".join(h.get("reasons", []))[:400])
        return "\n".join(lines)

    def _report_text(self, desk, r) -> str:
        led = desk.ledger
        lines = [f"probe {r.name} ({r.kind}):"]
        for o in r.outcomes:
            mn = o.artifacts.get("max_normalized")
            s = f"  {o.model} [{o.role}]: {o.status}"
            if mn:
                s += f", max v/tau {_fmt(led.value(mn))} [{led.handle(mn)}], worst probe {o.worst_probe}"
            lines.append(s)
            for p, d in list(o.probes.items())[:8]:
                ids = o.artifacts.get("probes", {}).get(p, {})
                viol = ", ".join(f"{k} {_fmt(led.value(a))} [{led.handle(a)}]"
                                 for k, a in ids.get("violations", {}).items())
                if viol:
                    lines.append(f"    {p}: {viol}")
        for k, aid in r.signal_artifacts.items():
            lines.append(f"  signal {k}: {_fmt(led.value(aid))} [{led.handle(aid)}]")
        if r.protocol_suspect:
            lines.append("  every model violates it: the protocol is suspect")
        return "\n".join(lines)

    # --- the five tools ----------------------------------------------------------------------------------------
    def propose(self, desk) -> Hypothesis | None:
        text = self._evidence_text(desk) + "\n\nPropose the next hypothesis (propose_hypothesis)."
        known = self._known(desk)
        settled = desk.memory.settled_keys()

        def handle(b):
            x = b["input"]
            errors = []
            for f in ("statement", "mechanism", "reason", "context"):
                errors += desk.ledger.check_text(str(x.get(f, "")), f, known)
            if x.get("contract") not in desk.suite:
                errors.append(f"contract {x.get('contract')!r} is not in the evidence suite ({', '.join(desk.suite)})")
            elif desk.suite[x["contract"]].check != x.get("check"):
                errors.append(f"contract {x['contract']} is a {desk.suite[x['contract']].check} contract, not "
                              f"{x.get('check')}")
            try:
                scope = Scope(**(x.get("scope") or {}))
            except Exception as exc:
                errors.append(f"scope: {exc}")
                scope = Scope()
            key = f"{x.get('contract')}:llm:{'+'.join(sorted(scope.elements))}:{'+'.join(sorted(scope.conditions))}"
            if key in settled:
                errors.append(f"a hypothesis with key {key} is already settled in the memory; propose another")
            if errors:
                return None, errors
            origin = []
            for m in re.finditer(r"\[(e:\d+)\]", x["statement"]):
                aid = desk.ledger.resolve(m.group(1))
                origin.append({"contract": x["contract"], "model": desk.target_name, "quantity": "cited",
                               "artifact": aid})
            from .schema import EvidenceRef

            refs = [EvidenceRef(contract=o["contract"], model=o["model"], artifact=o["artifact"],
                                quantity=self._quantity(desk, o["artifact"]), probe=self._probe(desk, o["artifact"]))
                    for o in origin]
            try:
                h = Hypothesis(id="H0", key=key, statement=x["statement"], check=x["check"], contract=x["contract"],
                               basis=x.get("basis", "exact"), scope=scope, mechanism=x["mechanism"],
                               importance=float(x["importance"]), severity=float(x["severity"]), origin=refs)
            except Exception as exc:
                return None, [f"hypothesis: {exc}"]
            self._current = b
            return h, None

        h = self._loop(desk, text, "propose_hypothesis", handle)
        self._result(self._current, f"accepted as the next hypothesis (key {h.key}); its id is given when you "
                                    "pre-register")
        return h

    def _quantity(self, desk, aid):
        a = desk.ledger.store.get(aid) if aid else None
        if a is None:
            return "cited"
        return {"max_normalized": "max v/tau", "normalized": "v/tau"}.get(a.kind, a.params.get("key") or a.kind)

    def _probe(self, desk, aid):
        a = desk.ledger.store.get(aid) if aid else None
        return a.params.get("probe") if a is not None else None

    def preregister(self, desk, h: Hypothesis) -> Preregistration:
        text = (f"Your hypothesis is {h.id}. Pre-register its predictions (preregister): protocols on "
                "configurations not yet evaluated, with the expected outcome on the target and the committee "
                "(at least half of it); add controls expected to pass and vary one factor at a time for the mechanism.")
        suggested = playbook_suggestions(desk, h)
        if suggested:
            text += (f"\nThe {h.check} playbook (pytest-mlip's fixed rules for this law) derives these predictions from "
                     "the evidence; pre-register them as they are, adapt them, or write your own:\n"
                     + json.dumps([{"name": p.name, "kind": p.kind, "target": p.target, "committee": p.committee,
                                    "rationale": p.rationale, "protocol": p.protocol,
                                    **({"excess_decades": p.excess_decades} if p.excess_decades is not None else {}),
                                    **({"above_band": True} if p.above_band else {})} for p in suggested]))
        known = self._known(desk)

        def handle(b):
            x = b["input"]
            errors = desk.ledger.check_text(str(x.get("reason", "")), "reason", known)
            preds = []
            for i, p in enumerate(x.get("predictions") or []):
                where = f"predictions[{i}]"
                table = p.get("protocol")
                if isinstance(table, dict) and p.get("name") and table.get("name") not in (None, p.get("name")):
                    errors.append(f"{where}: protocol name {table.get('name')!r} differs from the prediction name")
                    continue
                if isinstance(table, dict):
                    table = {"name": p.get("name"), **{k: v for k, v in table.items() if k != "name"}}
                gate = desk.validator.protocol(table, where=str(p.get("name")))
                if not gate.ok:
                    errors += [f"{where}: {e}" for e in gate.errors]
                    continue
                errors += desk.ledger.check_text(str(p.get("rationale", "")), f"{where}.rationale", known)
                try:
                    preds.append(Prediction(name=p["name"], kind=p["kind"], target=p["target"],
                                            committee=p.get("committee", "any"), rationale=p.get("rationale", ""),
                                            protocol=table, excess_decades=p.get("excess_decades"),
                                            above_band=p.get("above_band", False)))
                except Exception as exc:
                    errors.append(f"{where}: {exc}")
            if not errors and not any(p.kind == "scope" and p.target == "fail" for p in preds):
                errors.append("pre-register at least one scope protocol on which the target is expected to fail")
            if errors:
                return None, errors
            try:
                prereg = Preregistration(hypothesis=h.id, predictions=preds)
            except Exception as exc:
                return None, [str(exc)]
            self._current = b
            return prereg, None

        try:
            prereg = self._loop(desk, text, "preregister", handle)
        except MlipError as exc:
            raise NoProtocol(str(exc)) from None
        for p in prereg.predictions:
            gate = desk.validator.protocol(p.protocol, where=p.name, check_repeat=False)
            desk.validator.remember(gate.settings[0], f"pre-registration of {h.id}:{p.name}")
        self._result(self._current, "pre-registration recorded in the memory: "
                     + ", ".join(f"{p.name} ({p.kind})" for p in prereg.predictions))
        return prereg

    def probe_order(self, desk, h, prereg) -> list[str]:
        names = {p.name for p in prereg.predictions}
        text = "Request the probes to run now (request_probe, one call per pre-registered protocol)."
        self.requested = {}
        known = self._known(desk)
        for _ in range(MAX_ATTEMPTS):
            calls = self._ask(desk, text, None)
            for b in calls:
                x = b["input"]
                errors = _common_errors(x) or desk.ledger.check_text(str(x.get("reason", "")), "reason", known)
                if b["name"] != "request_probe":
                    errors = [f"this step takes request_probe, not {b['name']}"]
                elif x.get("protocol") not in names:
                    errors.append(f"protocol {x.get('protocol')!r} is not pre-registered for {h.id} "
                                  f"({', '.join(sorted(names))})")
                elif x["protocol"] in self.requested:
                    errors.append(f"{x['protocol']} is already requested")
                self._audit(desk, "request_probe", b, errors)
                if errors:
                    self.refusals.append("request_probe: " + "; ".join(errors))
                    self._result(b, "refused: " + "; ".join(errors), error=True)
                else:
                    self.requested[x["protocol"]] = b["id"]
            if self.requested:
                break
            text = "Request at least one pre-registered probe with request_probe."
        return list(self.requested)

    def review(self, desk, h, prereg, reports, rule: AgentVerdict) -> AgentVerdict:
        for name, tool_id in self.requested.items():
            r = reports.get(name)
            self.pending.append({"type": "tool_result", "tool_use_id": tool_id,
                                 "content": self._report_text(desk, r) if r else "not run: evaluation budget spent"})
        checks = "\n".join(f"- {c.name} ({c.kind}): expected {c.expected}, observed {c.observed}, held "
                           f"{c.held}" for c in rule.checks)
        text = (f"The predictions of {h.id} against the probes:\n{checks}\nRender your verdict (render_verdict): "
                "escalate only if the pre-registration supports it; reject otherwise, with the reason.")
        known = self._known(desk)

        def handle(b):
            from .judgement import allowed

            x = b["input"]
            errors = []
            for i, s in enumerate(x.get("reasons") or []):
                errors += desk.ledger.check_text(str(s), f"reasons[{i}]", known)
            errors += desk.ledger.check_text(str(x.get("domain_boundary", "")), "domain_boundary", known)
            for i, s in enumerate(x.get("confounds") or []):
                errors += desk.ledger.check_text(str(s), f"confounds[{i}]", known)
            problem = allowed(x.get("verdict"), rule) if rule.verdict != "exhausted" else None
            if problem:
                errors.append(problem)
            if errors:
                return None, errors
            self._current = b
            return x, None

        x = self._loop(desk, text, "render_verdict", handle)
        if rule.verdict == "exhausted":
            out = rule
        elif x["verdict"] == "reject" and rule.verdict == "escalate":
            out = AgentVerdict(hypothesis=h.id, verdict="reject", checks=rule.checks,
                               reasons=[f"rejected by the planner: {s}" for s in x.get("reasons", [])])
        else:
            out = rule.model_copy()
        out.reasons = out.reasons + [f"planner: {s}" for s in x.get("reasons", []) if s not in out.reasons]
        out.domain_boundary = x.get("domain_boundary", "")
        out.confounds = list(x.get("confounds") or [])[:5]
        out.planner_note = x.get("reason", "")
        self._result(self._current, f"verdict recorded: {out.verdict}")
        return out

    def write_plans(self, desk, h, prereg, reports, verdict) -> list[WritePlan]:
        if verdict.verdict != "escalate":
            return []
        failed = {n for n, r in reports.items() if r.target.status in ("fail", "error")}
        text = (f"{h.id} is escalated. Name the pre-registered protocols to keep as a regression-test file "
                f"(write_protocol); the target violated: {', '.join(sorted(failed))}.")
        known = self._known(desk)

        def handle(b):
            from .validator import check_slug

            x = b["input"]
            errors = check_slug(x.get("slug", ""))
            errors += desk.ledger.check_text(str(x.get("reason", "")), "reason", known)
            names = x.get("protocols") or []
            for n in names:
                if n not in failed:
                    errors.append(f"{n!r} is not a pre-registered protocol the target violated")
            if errors:
                return None, errors
            self._current = b
            return WritePlan(slug=x["slug"], predictions=list(names), reason=x["reason"]), None

        plan = self._loop(desk, text, "write_protocol", handle)
        self._result(self._current, f"the validator gates and writes mlip_{plan.slug}.toml")
        return [plan]


def _common_errors(x) -> list[str]:
    if not isinstance(x, dict):
        return ["tool input must be an object"]
    errors = []
    for k in ("reason", "context"):
        if not isinstance(x.get(k), str) or not x.get(k, "").strip():
            errors.append(f"every tool input needs a non-empty {k!r}")
    return errors


def _clean_block(b: dict) -> dict:
    if b.get("type") == "tool_use":
        return {"type": "tool_use", "id": b["id"], "name": b["name"], "input": b["input"]}
    if b.get("type") == "text":
        return {"type": "text", "text": b.get("text", "")}
    return {k: v for k, v in b.items() if v is not None}


def _fmt(v) -> str:
    from ..reporting.claims import fmt_value

    return fmt_value(v)


def replay_client(responses: list[dict], requests: list | None = None):
    """An ``anthropic.Anthropic`` client whose HTTP transport replays ``responses`` (Messages API JSON) in order.

    Each request body is appended to ``requests`` (when given), so a test can check what the planner sent.
    """
    import anthropic

    hx = _http_module()
    queue = list(responses)

    def handler(request):
        body = json.loads(request.content.decode() or "{}")
        if requests is not None:
            requests.append(body)
        if not queue:
            return hx.Response(500, json={"type": "error", "error": {"type": "api_error",
                                                                     "message": "no recorded response left"}})
        return hx.Response(200, json=queue.pop(0), headers={"content-type": "application/json"})

    return anthropic.Anthropic(api_key="recorded", max_retries=0,
                               http_client=hx.Client(transport=hx.MockTransport(handler)))


def _http_module():
    """The HTTP package the installed anthropic SDK is built on: httpx, or httpx2 in newer releases."""
    from anthropic import _base_client

    return getattr(_base_client, "httpx2", None) or _base_client.httpx
