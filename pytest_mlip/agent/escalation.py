"""An escalation report's record: seven fixed sections of typed claims (see :mod:`.record`).

Per escalated hypothesis, a folder with ``escalation.json`` (the record),
``report.md`` (rendered from it), ``figure.png``, ``reproduce.py``, the
protocol file, ``dft/`` (extxyz, VASP and Quantum ESPRESSO inputs) and
``provenance.sqlite`` (a snapshot of every artifact the record cites, so
``pytest-mlip judge report.md`` re-verifies it). Sections: (1) finding, with
the evidence it started from; (2) type; (3) application failure and domain
boundary (the law's text: :mod:`.lawreport`); (4) one figure; (5) a minimal
reproduction; (6) a DFT verification card with a decision table derived from
the pre-registration; (7) confounds closed (at most five); then the
pre-registration and the probe results.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from .lawreport import law_report
from .record import (FORMAT, VERSION, Decision, Expect, Held, Image, Line, LawText, ModelRow, Models, Name, Phrase,
                     Record, Run, Table, Text, Value, Verdict)

DERIVE_PREFIX = "pytest_mlip.agent.signals."


def _f(x):
    return float(x) if isinstance(x, str) else x


def failing_probes(outcome) -> list[str]:
    out = []
    for p, d in outcome.probes.items():
        if d["status"] == "error" or (d["normalized"] is not None and _f(d["normalized"]) > 1.0):
            out.append(p)
    return sorted(out, key=lambda p: -_f(outcome.probes[p]["normalized"] or 0))


def rewrite_citations(text: str, ledger) -> str:
    """Planner text: handles ``[e:N]`` become ``[a:ID]`` (and are cited by the run artifact)."""
    from ..provenance.artifact import SHORT_ID

    def sub(m):
        aid = ledger.resolve(m.group(1))
        if aid is None:
            return m.group(0)
        ledger.cite(aid)
        return f"[a:{aid[:SHORT_ID]}]"

    return re.sub(r"\[((?:e|a):[^\]\s]+)\]", sub, text)


def quantity_of(a) -> str:
    """What an artifact is, as a report names it."""
    return {"normalized": "v/tau", "max_normalized": "max v/tau", "tolerance": "tau"}.get(
        a.kind, str(a.params.get("key") or a.params.get("name") or a.kind))


class Items:
    """Builds items of a record from the ledger's artifacts, citing each one it prints."""

    def __init__(self, ledger, check: str):
        self.ledger, self.check = ledger, check
        self._arts: dict = {}

    def art(self, aid):
        if aid not in self._arts:
            self._arts[aid] = self.ledger.store.get(aid)
        return self._arts[aid]

    def P(self, pid: str) -> Phrase:
        return Phrase(k="phrase", id=pid)

    def law_phrase(self, key: str) -> Phrase:
        return Phrase(k="phrase", id=f"law:{self.check}:{key}")

    def N(self, role: str, name: str) -> Name:
        return Name(k="name", role=role, name=str(name))

    def value(self, aid: str, label: bool = True) -> Value:
        from ..reporting.claims import fmt_value

        a = self.art(aid)
        self.ledger.cite(aid)
        return Value(k="value", artifact=aid, text=fmt_value(self.ledger.value(aid)), unit=unit_of(a, self.check),
                     quantity=quantity_of(a), label=label, contract=a.params.get("contract"),
                     model=a.model.name if a.model else None, probe=a.params.get("probe"))

    def verdict(self, aid: str, form: str = "status") -> Verdict:
        a = self.art(aid)
        self.ledger.cite(aid)
        return Verdict(k="verdict", artifact=aid, status=a.value, form=form, contract=a.params.get("contract"),
                       model=a.model.name if a.model else "?")

    def where(self, protocol, model, probe=None) -> list:
        out = [self.N("protocol", protocol), self.P("on"), self.N("model", model)]
        if probe:
            out += [self.P("probe"), self.N("probe", probe)]
        return out + [self.P("colon")]

    def join(self, items, sep="comma") -> list:
        out = []
        for i, x in enumerate(items):
            out += ([self.P(sep)] if i else []) + (x if isinstance(x, list) else [x])
        return out


def unit_of(a, check: str | None = None) -> str:
    """The unit of a number artifact: ``1`` for v/tau; the recorded unit; for a check's observable recorded without
    one, the unit its law's report declares."""
    if a.kind in ("normalized", "max_normalized"):
        return "1"
    u = a.params.get("units")
    if isinstance(u, str):
        return u
    if a.kind == "observable" and check:
        return law_report(check).observable_units.get(str(a.params.get("name")), "")
    return ""


class EscalationWriter(Items):
    """The record of one escalation (and its figure, reproduction script and DFT inputs in ``folder``)."""

    def __init__(self, det, desk, esc, folder: Path, decision: str):
        super().__init__(desk.ledger, esc.hypothesis.check)
        self.det, self.desk, self.esc, self.folder = det, desk, esc, Path(folder)
        self.h, self.prereg, self.reports, self.verdict_ = esc.hypothesis, esc.prereg, esc.reports, esc.verdict
        self.decision = decision
        self.law = law_report(self.h.check)
        self.pred = {p.name: p for p in self.prereg.predictions}
        self.scope = [r for r in self.reports.values() if r.kind == "scope" and self.pred[r.name].target == "fail"
                      and r.target.status in ("fail", "error")]
        self.required: list[str] = []
        self.blocks: list = []

    # helpers for law reports ------------------------------------------------------------------------------------
    failing_probes = staticmethod(failing_probes)

    @staticmethod
    def probe_ids(outcome, probe) -> dict:
        return outcome.artifacts.get("probes", {}).get(probe, {})

    def model_of(self, outcome):
        from ..evaluation import evaluator_for

        return evaluator_for(outcome.model).model

    def derive(self, name, value, parents, params, reason) -> str:
        t = self.scope[0].target if self.scope else next(iter(self.reports.values())).target
        return self.ledger.derive(name, value, parents, model=self.model_of(t),
                                  params={"check": self.check, **params},
                                  context={k: params[k] for k in ("probe", "contract") if k in params}, reason=reason)

    def ratio(self, name, aid, scale, reason, probe=None, contract=None, units="") -> str | None:
        if not aid:
            return None
        v = _f(self.ledger.value(aid))
        if v is None or not math.isfinite(v):
            return None
        return self.derive(name, v / scale, [aid], {"contract": contract, "probe": probe, "units": units,
                                                    "rule": f"value / {scale:g}", "scale": scale}, reason)

    def bars(self, fig):
        r = self.scope[0] if self.scope else next(iter(self.reports.values()))
        ax = fig.subplots()
        probes = list(dict.fromkeys(p for o in r.outcomes for p in o.probes))
        width = 0.8 / max(1, len(r.outcomes))
        for k, o in enumerate(r.outcomes):
            vals = []
            for p in probes:
                v = (o.probes.get(p) or {}).get("normalized")
                v = _f(v) if v is not None else float("nan")
                vals.append(min(v, 1e12) if v == v else float("nan"))
            xs = [i + k * width for i in range(len(probes))]
            ax.bar(xs, [max(v, 1e-8) if v == v else 0 for v in vals], width=width,
                   color="tab:red" if o.role == "target" else None, label=o.model)
        ax.set_yscale("log")
        ax.axhline(1.0, ls="--", color="k", lw=0.8)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(probes))])
        ax.set_xticklabels(probes, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("worst v/tau")
        ax.set_title(f"{r.name}", fontsize=9)
        ax.legend(fontsize=7)

    def D(self) -> Decision:
        v = self.verdict_
        return Decision(k="decision", artifact=self.decision, hypothesis=self.h.id, verdict=v.verdict, type=v.type)

    def line(self, t, items):
        self.blocks.append(Line(t=t, items=items))

    def head(self, pid):
        self.line("h2", [self.P(pid)])

    def text(self, s: str) -> Text:
        return Text(k="text", text=rewrite_citations(s, self.ledger))

    # sections ---------------------------------------------------------------------------------------------------
    def header(self):
        led = self.ledger
        self.line("h1", [self.P("title.escalation"), self.N("hypothesis", self.h.id), self.P("on"),
                         self.N("model", self.desk.target_name)])
        self.line("li", [self.P("h.run"), self.N("run", led.run_id)])
        self.line("li", [self.P("h.code"), self.N("code_version", led.code_version)])
        self.line("li", [self.P("h.store"), self.N("store", "provenance.sqlite")])
        self.line("li", [self.P("h.hypothesis"), self.N("hypothesis", self.h.id), self.P("open"),
                         self.N("key", self.h.key), self.P("close"), self.P("h.planner"),
                         self.N("planner", self.h.planner)])
        self.line("li", [self.P("h.decision"), self.D(), self.P("h.human")])
        self.blocks.append(Models(t="models", models=[
            ModelRow(name=n, role=m["role"], version=m.get("version"), weights_hash=m.get("weights_hash"))
            for n, m in led.models.items()]))

    def finding(self):
        self.head("sec.finding")
        self.line("p", [self.text(self.h.statement)])
        if self.h.mechanism:
            self.line("p", [self.P("f.mechanism"), self.text(self.h.mechanism), self.P("period")])
        self.line("p", [self.P("f.evidence")])
        for o in self.h.origin:
            if o.artifact:
                self.line("li", self.where(o.contract, o.model, o.probe) + [self.value(o.artifact)])
        self.line("p", [self.P("f.headline")])
        for r in self.scope:
            for o in r.outcomes:
                vid = o.artifacts.get("verdict")
                if not vid:
                    continue
                if o.role == "target" and o.status in ("fail", "error"):
                    self.required.append(vid)
                items = [self.N("protocol", r.name), self.P("on"), self.N("model", o.model), self.P(f"role.{o.role}"),
                         self.P("colon"), self.verdict(vid, "verdict")]
                if o.artifacts.get("max_normalized"):
                    items += [self.P("comma"), self.value(o.artifacts["max_normalized"])]
                self.line("li", items)
            for p in failing_probes(r.target)[:3]:
                viol = [self.value(a) for a in self.probe_ids(r.target, p).get("violations", {}).values()]
                if viol:
                    self.line("li2", self.where(r.name, r.target.model, p) + self.join(viol))

    def type_section(self):
        self.head("sec.type")
        self.line("p", [self.P("type.exact" if self.verdict_.type == "exact-constraint violation"
                               else "type.disagreement")])

    def impact(self):
        self.head("sec.impact")
        if not self.scope:
            self.line("p", [self.P("i.none")])
            return
        r = self.scope[0]
        lines, boundary = self.law.impact(self, r, failing_probes(r.target)[:2])
        for items in lines:
            self.line("li", items)
        for x in (x for x in self.reports.values() if x.kind == "impact"):
            for o in x.outcomes:
                if o.role != "target" or not o.artifacts.get("verdict"):
                    continue
                items = [self.P("i.probe"), self.N("protocol", x.name), self.P("on"), self.N("model", o.model),
                         self.P("colon"), self.verdict(o.artifacts["verdict"], "verdict")]
                if o.artifacts.get("max_normalized"):
                    items += [self.P("comma"), self.value(o.artifacts["max_normalized"])]
                if self.pred[x.name].rationale:
                    items += [self.P("open"), self.text(self.pred[x.name].rationale), self.P("close")]
                self.line("li", items)
                if o.status == "pass":
                    boundary.append([self.P("i.impact_pass"), self.N("protocol", x.name), self.P("i.where_obeys"),
                                     self.verdict(o.artifacts["verdict"], "law")])
        self.line("p", [self.P("i.boundary")] + (self.join(boundary, "semicolon") if boundary
                                                 else [self.P("i.no_boundary")]) + [self.P("period")])
        if self.verdict_.domain_boundary:
            self.line("p", [self.P("i.planner_boundary"), self.text(self.verdict_.domain_boundary),
                            self.P("period")])

    def figure(self):
        from ..reporting.figures import import_matplotlib

        import_matplotlib().use("Agg", force=False)
        from matplotlib.figure import Figure

        from ..reporting.figures import to_png

        self.head("sec.figure")
        fig = Figure(figsize=(8.0, 3.6), dpi=100)
        caption = self.law.figure(self, fig)
        (self.folder / "figure.png").write_bytes(to_png(fig))
        self.blocks.append(Image(t="image", file="figure.png"))
        self.line("p", [caption])

    def reproduction(self, protocol_file: str | None):
        from .reproduce import reproduce_script

        self.head("sec.reproduction")
        (self.folder / "reproduce.py").write_text(reproduce_script(self, protocol_file))
        self.line("p", [self.N("code", "python reproduce.py"), self.P("r.from"),
                        self.N("file", protocol_file) if protocol_file else self.P("r.scope"), self.P("r.rest"),
                        self.N("code", "pytest_mlip.testing.run_contract"), self.P("r.prints"),
                        self.N("code", "generated_tests/"), self.P("r.collected"),
                        self.N("code", "pytest --mlip=MODEL"),
                        self.P("period")])

    def dft_card(self):
        from ..contracts.files import parse_contracts
        from . import dft
        from .protocols import to_toml

        self.head("sec.dft")
        if not self.scope:
            self.line("p", [self.P("d.none")])
            return
        led = self.ledger
        r = self.scope[0]
        t = r.target
        settings = parse_contracts(Path(f"{r.name}.toml"), text=to_toml([self.pred[r.name].protocol]))[0]
        probes = failing_probes(t)[:2]
        series = {}
        for p in probes:
            ids = self.probe_ids(t, p)
            s = ids.get("series", {})
            if s.get("curve_r") and s.get("curve_E"):
                req = ids.get("observables", {}).get("r_eq")
                series[p] = {"r": led.value(s["curve_r"]), "E": led.value(s["curve_E"]),
                             "ids": [s["curve_r"], s["curve_E"]],
                             "r_eq": led.value(req) if req else max(led.value(s["curve_r"]))}
        configs = dft.configurations(settings, probes, series)
        manifest = dft.write_inputs(configs, self.folder / "dft")
        vid = t.artifacts.get("verdict")
        parents = [vid] + [i for p in probes for i in self.probe_ids(t, p).get("violations", {}).values()]
        n_id = self.derive("dft_single_points", len(configs), parents,
                           {"units": "", "rule": "configurations rebuilt from the protocol"},
                           "how many reference single points the card asks for")
        ch_id = self.derive("dft_core_hours", round(manifest["core_hours"], 3), [n_id],
                            {"units": "core-hours", "rule": f"{dft.CORE_H:g} x (V / 1000 A^3) x max(1, N/10)^2 "
                                                            "per single point"},
                            "a rough cost estimate of the card (spin-polarised PBE single points)")
        self.line("p", [self.P("d.compute"), self.value(n_id), self.P("d.points"), self.value(ch_id),
                        self.P("d.hours")])
        self.line("li", [self.N("file", "dft/configurations.extxyz"), self.P("d.extxyz_what")])
        self.line("li", [self.N("code", "dft/vasp/<name>/"), self.P("d.vasp_what")])
        self.line("li", [self.N("code", "dft/qe/<name>.pwi"), self.P("d.qe_what"), self.N("code", "espresso-in"),
                         self.P("d.qe_rest"), self.N("code", "./pseudo"), self.P("d.qe_end")])
        self.line("p", [self.P("d.settings")])
        rows = []
        for cfg in configs:
            dist = [self.P("d.none_cell")]
            if cfg.distance is not None and cfg.parents:
                did = self.derive("distance", cfg.distance, cfg.parents,
                                  {"probe": cfg.probe, "units": "A", "config": cfg.name,
                                   "rule": "a point of the target's own scan"},
                                  "separation of the pair in this configuration")
                dist = [self.value(did, label=False)]
            rows.append([[self.N("config", cfg.name)], [self.N("probe", cfg.probe)], [Text(k="text", text=cfg.role)],
                         dist])
        self.blocks.append(Table(t="table", head=[[self.P("d.configuration")], [self.P("d.probe")], [self.P("d.role")],
                                                  [self.P("d.distance")]], rows=rows))
        self.line("p", [self.P("d.table")])
        tol = t.artifacts.get("tolerance", {})
        fill = {k: self.value(a, label=False) for k, a in tol.items()}
        rows = [[[LawText(k="law", law=self.check, key="outcome.0", fill=fill), self.P("d.on_configs"),
                  self.N("protocol", r.name)],
                 [self.P("d.confirmed"), self.N("protocol", r.name), self.P("close")]],
                [[LawText(k="law", law=self.check, key="outcome.1", fill=fill)], [self.P("d.refuted")]]]
        for p in self.prereg.predictions:
            if p.kind == "control":
                rows.append([[self.P("d.control"), self.N("protocol", p.name), self.P("d.control_as")],
                             [self.P("d.no_change")]])
        rows.append([[self.P("d.unconverged")], [self.P("d.undecided")]])
        self.blocks.append(Table(t="table", head=[[self.P("d.outcome")], [self.P("d.verdict")]], rows=rows))

    def confounds(self):
        out = []
        for r in self.reports.values():
            if r.kind == "mechanism" and self.pred[r.name].target == "fail" and r.target.status in ("fail", "error"):
                factor = self.pred[r.name].rationale.split(":")[0]
                out.append([self.P("c.sampling"), self.text(factor), self.P("comma"), self.N("protocol", r.name),
                            self.P("on"), self.N("model", r.target.model), self.P("c.still"),
                            self.verdict(r.target.artifacts["verdict"], "law")] + self._max(r.target)
                           + [self.P("period")])
        for r in self.scope[:1]:
            members = [o for o in r.committee if o.status != "skip" and o.artifacts.get("verdict")]
            if members:
                parts = [[self.N("protocol", r.name), self.P("on"), self.N("model", o.model), self.P("colon"),
                          self.verdict(o.artifacts["verdict"], "law")] + self._max(o) for o in members]
                out.append([self.P("c.protocol")] + self.join(parts, "semicolon") + [self.P("period")])
            tol = r.target.artifacts.get("tolerance", {})
            if tol and r.target.artifacts.get("max_normalized"):
                key = next(iter(tol))
                out.append([self.P("c.float32"), self.value(tol[key]), self.P("c.float32_rest"),
                            self.value(r.target.artifacts["max_normalized"]), self.P("period")])
        for r in self.reports.values():
            if r.kind == "control" and r.target.artifacts.get("verdict"):
                out.append([self.P("c.control"), self.N("protocol", r.name), self.P("on"),
                            self.N("model", r.target.model), self.P("space"),
                            self.verdict(r.target.artifacts["verdict"], "law")] + self._max(r.target)
                           + [self.P("period")])
        for r in self.reports.values():
            for o in r.outcomes:
                if o.role != "extra" or not o.artifacts.get("verdict"):
                    continue
                if o.model.endswith("@float64"):
                    out.append([self.P("c.float64"), self.N("model", o.model), self.P("c.float64_rest"),
                                self.verdict(o.artifacts["verdict"], "law")] + self._max(o) + [self.P("period")])
                elif o.status in ("fail", "error"):
                    out.append([self.P("c.sibling"), self.N("model", o.model), self.P("c.sibling_rest"),
                                self.verdict(o.artifacts["verdict"], "law")] + self._max(o) + [self.P("period")])
        out.append([self.P("c.elements")])
        planner = [[self.P("c.planner"), self.text(x)] for x in self.verdict_.confounds]
        keep = out[:max(5 - len(planner), 3)]
        self.head("sec.confounds")
        for items in (keep + planner)[:5]:
            self.line("li", items)

    def _max(self, o) -> list:
        aid = o.artifacts.get("max_normalized")
        return [self.P("comma"), self.value(aid)] if aid else []

    def preregistration(self):
        from .judgement import held_by_prediction

        self.head("sec.prereg")
        self.line("p", [self.P("p.rule"), self.text(self.prereg.decision_rule), self.P("period")])
        held = held_by_prediction(self.verdict_.checks)
        rows = []
        for p in self.prereg.predictions:
            r = self.reports.get(p.name)
            vid = r.target.artifacts.get("verdict") if r else None
            obs = [self.verdict(vid)] if vid else [self.P("p.not_run")]
            if p.excess_decades is not None and r and r.signal_artifacts.get("disagreement"):
                obs += [self.P("p.disagreement"), self.value(r.signal_artifacts["disagreement"], label=False),
                        self.P("p.decades")]
            E = dict(k="expect", artifact=self.decision, prediction=p.name)
            rows.append([[self.N("protocol", p.name)], [Expect(**E, who="kind", expect=p.kind)],
                         [Expect(**E, who="target", expect=p.target)],
                         [Expect(**E, who="committee", expect=p.committee, decades=p.excess_decades)], obs,
                         [Held(k="held", artifact=self.decision, prediction=p.name, held=held.get(p.name, "n/a"))]])
        self.blocks.append(Table(t="table", head=[[self.P(x)] for x in ("p.protocol", "p.kind", "p.target",
                                                                        "p.committee", "p.observed", "p.held")],
                                 rows=rows))
        for r in self.reports.values():
            models = list(r.outcomes)
            self.line("h3", [self.N("protocol", r.name), self.P("p.per_probe")])
            head = [[self.P("p.probe")]] + [[self.N("model", o.model), self.P(f"role.{o.role}")] for o in models]
            rows = []
            for p in dict.fromkeys(p for o in models for p in o.probes):
                cells = [[self.N("probe", p)]]
                for o in models:
                    d = o.probes.get(p)
                    aid = self.probe_ids(o, p).get("normalized")
                    cells.append([self.value(aid, label=False)] if aid else
                                 [self.P("p.skip" if d and d["status"] == "skip" else "p.none")])
                rows.append(cells)
            self.blocks.append(Table(t="table", head=head, rows=rows))

    def record(self, protocol_file: str | None) -> Record:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ledger.cite(self.decision)
        self.header()
        self.finding()
        self.type_section()
        self.impact()
        self.figure()
        self.reproduction(protocol_file)
        self.dft_card()
        self.confounds()
        self.preregistration()
        led = self.ledger
        return Record(format=FORMAT, version=VERSION, kind="escalation", hypothesis=self.h.id,
                      run=Run(id=led.run_id, code_version=led.code_version, store="provenance.sqlite"),
                      blocks=self.blocks)
