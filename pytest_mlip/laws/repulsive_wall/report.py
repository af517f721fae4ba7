"""The repulsive wall in an escalation report: where the wall turns over, the barrier to it, and the scans."""

from __future__ import annotations

from ...agent.lawreport import K_B, LawReport
from ...provenance.artifact import from_finite_or_str

#: a turnover barrier this many kT above r_eq is essentially never crossed thermally
SAFE_KT = 10.0


def turnover(r: list, e: list, r_eq: float) -> tuple[float, float] | None:
    """(r of the highest energy inside r_eq, that energy above E(r_eq), floored at zero); None without inner points."""
    inner = [(ri, ei) for ri, ei in zip(r, e) if ri < r_eq]
    if not inner:
        return None
    i_eq = min(range(len(r)), key=lambda i: abs(r[i] - r_eq))
    r_turn, e_turn = max(inner, key=lambda t: t[1])
    return r_turn, max(0.0, e_turn - e[i_eq])


class WallReport(LawReport):
    phrases = {
        "turns": "; the wall turns over at ",
        "above": " above r_eq, after which the energy falls without bound: relaxations started from overlapping atoms "
                 "and energetic collisions (sputtering, shock, radiation damage, high-temperature melts) collapse "
                 "atoms together.",
        "a": ", a ",
        "thermal": "thermal sampling of ",
        "below": " below ",
        "ten_kt": " (the turnover barrier is ten kT there)",
        "caption": "Repulsive-wall scans E(r) - E(r_eq) of the failing pairs for the target (thick) and the committee "
                   "(thin); symmetric-log energy axis.",
    }
    observable_units = {"r_eq": "A"}

    def numbers(self, w, outcome, probe: str, contract: str) -> dict:
        ids = w.probe_ids(outcome, probe)
        series = ids.get("series", {})
        r_id, e_id = series.get("curve_r"), series.get("curve_E")
        req_id = ids.get("observables", {}).get("r_eq")
        if not (r_id and e_id and req_id):
            return {}
        got = turnover(w.ledger.value(r_id), w.ledger.value(e_id), w.ledger.value(req_id))
        if got is None:
            return {}
        r_turn, barrier = got
        out = {"r_eq": req_id}
        common = {"contract": contract, "probe": probe}
        out["turnover_r"] = w.derive("turnover_r", r_turn, [r_id, e_id, req_id], {**common, "units": "A",
                                     "rule": "r of the highest energy inside r_eq"},
                                     "where the wall turns over: beyond it, going inward, the energy falls")
        out["turnover_barrier"] = w.derive(
            "turnover_barrier", barrier, [r_id, e_id, req_id],
            {**common, "units": "eV", "rule": "E(turnover_r) - E(r_eq)"},
            "energy a pair needs, from r_eq, to reach the turnover and fall into the collapse")
        out["safe_temperature"] = w.ratio(
            "safe_temperature", out["turnover_barrier"], SAFE_KT * K_B,
            f"temperature at which the turnover barrier is {SAFE_KT:g} kT: thermal sampling below it essentially "
            "never reaches the collapse", probe, contract, "K")
        return out

    def recompute(self, name: str, params: dict, parents: list):
        """The value of a derived number from its parent artifacts (None: not one of this law's)."""
        by = {str(a.params.get("name")): from_finite_or_str(a.value) for a in parents}
        if name in ("turnover_r", "turnover_barrier") and {"curve_r", "curve_E", "r_eq"} <= set(by):
            got = turnover(by["curve_r"], by["curve_E"], by["r_eq"])
            if got is None:
                return None
            return got[0] if name == "turnover_r" else got[1]
        return None

    def impact(self, w, r, probes):
        t = r.target
        lines, boundary = [], []
        for p in probes:
            nums = self.numbers(w, t, p, r.name)
            if not nums:
                continue
            lines.append(w.where(r.name, t.model, p) + [w.value(nums["r_eq"]),
                         self.P(w, "turns"), w.value(nums["turnover_r"]), self.P(w, "a"),
                         w.value(nums["turnover_barrier"]), self.P(w, "above")])
            boundary.append([self.P(w, "thermal"), w.N("probe", p), self.P(w, "below"),
                             w.value(nums["safe_temperature"]), self.P(w, "ten_kt")])
        return lines, boundary

    @staticmethod
    def P(w, key):
        return w.law_phrase(key)

    def figure(self, w, fig):
        r = w.scope[0] if w.scope else None
        if r is None:
            return super().figure(w, fig)
        led = w.ledger
        probes = w.failing_probes(r.target)[:3]
        axes = fig.subplots(1, max(1, len(probes)), squeeze=False)[0]
        for ax, p in zip(axes, probes):
            for o in r.outcomes:
                ids = w.probe_ids(o, p)
                s = ids.get("series", {})
                req = ids.get("observables", {}).get("r_eq")
                if not (s.get("curve_r") and s.get("curve_E") and req):
                    continue
                rr, ee, r_eq = led.value(s["curve_r"]), led.value(s["curve_E"]), led.value(req)
                i = min(range(len(rr)), key=lambda k: abs(rr[k] - r_eq))
                y = [x - ee[i] for x in ee]
                ax.plot(rr, y, lw=2.4 if o.role == "target" else 1.0,
                        color="tab:red" if o.role == "target" else None, label=o.model)
            ax.set_yscale("symlog", linthresh=1.0)
            ax.axhline(0.0, color="0.6", lw=0.6)
            ax.set_title(p, fontsize=9)
            ax.set_xlabel("r (A)")
        axes[0].set_ylabel("E(r) - E(r_eq) (eV)")
        axes[0].legend(fontsize=7)
        return w.law_phrase("caption")
