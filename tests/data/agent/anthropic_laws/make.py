"""Writes the recorded Messages API responses of tests/test_agent_anthropic_laws.py (one JSON file per law).

The responses are what a model calling the planner's tools would send for one hypothesis per law: propose,
pre-register, request the probes, render the verdict, name the protocols to keep. Run from the repository root:
python tests/data/agent/anthropic_laws/make.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
WHY = {"reason": "the target violates this law on the evidence while the committee obeys it",
       "context": "the evidence table of this run and an empty memory"}

SCENARIOS = {
    "adsorption_sign": {
        "suite": {"name": "ads-small", "check": "adsorption_sign", "metals": ["Ni", "Cu"], "adsorbates": ["O"],
                  "sites": ["ontop", "hollow"], "relax_sites": 1},
        "hypothesis": {"statement": "The target repels atomic O from Ni while it binds O on Cu: the sign defect "
                                    "follows O near Ni, the Materials Project +U block",
                       "scope": {"elements": ["Ni", "O"], "conditions": ["+U block"]},
                       "mechanism": "mixed PBE and PBE+U training energies put Ni-O environments on another "
                                    "energy reference"},
        "predictions": [
            {"name": "ads-scope", "kind": "scope", "target": "fail", "committee": "pass",
             "rationale": "an unseen configuration of the block: O on the bridge site of Ni",
             "protocol": {"check": "adsorption_sign", "metals": ["Ni"], "adsorbates": ["O"], "sites": ["bridge"]}},
            {"name": "ads-control", "kind": "control", "target": "pass", "committee": "pass",
             "rationale": "outside the block: O on Pd binds",
             "protocol": {"check": "adsorption_sign", "metals": ["Pd"], "adsorbates": ["O"],
                          "sites": ["ontop", "hollow"], "relax_sites": 1}},
        ],
        "keep": ["ads-scope"], "slug": "u-block-oxygen",
    },
    "desorption_barrier": {
        "suite": {"name": "desorb-small", "check": "desorption_barrier", "hard": False,
                  "cases": [{"adsorbate": "CO", "metal": "Cu", "facet": "fcc111", "site": "ontop"}], "neb": False},
        "hypothesis": {"statement": "The target puts a spurious barrier on the desorption path of CO from a close-packed Cu surface; "
                                    "the same barrier is predicted for other molecule and facet pairs",
                       "scope": {"elements": ["C", "O", "Cu"], "conditions": ["rigid scan"]},
                       "mechanism": "adsorption benchmarks score only the relaxed minimum, so the path between the "
                                    "adsorbed state and the gas phase is unconstrained"},
        "predictions": [
            {"name": "desorb-scope", "kind": "scope", "target": "fail", "committee": "pass",
             "rationale": "an unseen molecule and metal pair: NO on a close-packed Pd surface",
             "protocol": {"check": "desorption_barrier", "hard": False, "neb": False,
                          "cases": [{"adsorbate": "NO", "metal": "Pd", "facet": "fcc111", "site": "hollow"}]}},
            {"name": "desorb-finer", "kind": "mechanism", "target": "fail", "committee": "any",
             "rationale": "the same case on a finer rigid scan: a real feature of the path stays",
             "protocol": {"check": "desorption_barrier", "hard": False, "neb": False, "dz_step": 0.1,
                          "cases": [{"adsorbate": "CO", "metal": "Cu", "facet": "fcc111", "site": "ontop"}]}},
        ],
        "keep": ["desorb-scope"], "slug": "desorption-barrier-no-pd",
    },
    "dimer_tail": {
        "suite": {"name": "tail-small", "check": "dimer_tail", "elements": ["Cu"]},
        "hypothesis": {"statement": "The target keeps a large share of the Cu dimer well depth at the tail distance "
                                    "where the committee keeps almost none; unseen homonuclear dimers are "
                                    "predicted to show the same mid-range attraction",
                       "scope": {"elements": ["Cu"], "conditions": ["tail distance"]},
                       "mechanism": "a spurious mid-range attraction in the pair channel"},
        "predictions": [
            {"name": "tail-scope", "kind": "scope", "target": "fail", "committee": "pass",
             "rationale": "unseen dimers of neighbouring metals: Ag and Au",
             "protocol": {"check": "dimer_tail", "elements": ["Ag", "Au"]}},
            {"name": "tail-nearer", "kind": "mechanism", "target": "fail", "committee": "any",
             "rationale": "the tail read nearer the well: the attraction is broad, not a single distance",
             "protocol": {"check": "dimer_tail", "elements": ["Cu"], "distance": 4.3}},
        ],
        # a disagreement law: the target's tail stands above the committee but by less than the decade the rules
        # ask of disagreement alone, so the rules reject and the planner renders reject (nothing is kept)
        "verdict": "reject", "keep": [], "slug": "dimer-mid-range-tail",
    },
    # the same law with the committee band pre-registered on the scope probe: the target above one and above the
    # band by more than the committee's spread is the disagreement the rules escalate (a protocol is kept)
    "dimer_tail_band": {
        "check": "dimer_tail",
        "suite": {"name": "tail-small", "check": "dimer_tail", "elements": ["Cu"]},
        "hypothesis": {"statement": "The target keeps a large share of the Cu dimer well depth at the tail distance "
                                    "where the committee keeps almost none; unseen homonuclear dimers are "
                                    "predicted to stand above the committee band",
                       "scope": {"elements": ["Cu"], "conditions": ["tail distance"]},
                       "mechanism": "a spurious mid-range attraction in the pair channel"},
        "predictions": [
            {"name": "tail-scope", "kind": "scope", "target": "fail", "committee": "pass", "above_band": True,
             "rationale": "unseen dimers of neighbouring metals: Ag and Au, above the committee band",
             "protocol": {"check": "dimer_tail", "elements": ["Ag", "Au"]}},
            {"name": "tail-nearer", "kind": "mechanism", "target": "fail", "committee": "any",
             "rationale": "the tail read nearer the well: the attraction is broad, not a single distance",
             "protocol": {"check": "dimer_tail", "elements": ["Cu"], "distance": 4.3}},
        ],
        "keep": ["tail-scope"], "slug": "dimer-tail-above-band",
    },
    "pes_smoothness": {
        "suite": {"name": "pes-small", "check": "pes_smoothness", "pairs": [["Cu", "Cu"]]},
        "hypothesis": {"statement": "The Cu dimer energy of the target jumps with no force on a smooth scan; "
                                    "unseen pairs are predicted to jump at the same distance",
                       "scope": {"elements": ["Cu"], "conditions": ["dimer scan"]},
                       "mechanism": "a discontinuous term in the pair energy (a hard switch or a step in a "
                                    "radial basis)"},
        "predictions": [
            {"name": "pes-scope", "kind": "scope", "target": "fail", "committee": "pass",
             "rationale": "unseen pairs: Ag with Ag and Cu with Ni",
             "protocol": {"check": "pes_smoothness", "pairs": [["Ag", "Ag"], ["Cu", "Ni"]]}},
            {"name": "pes-finer", "kind": "mechanism", "target": "fail", "committee": "any",
             "rationale": "the same pair on a finer grid: a true jump stays a jump",
             "protocol": {"check": "pes_smoothness", "pairs": [["Cu", "Cu"]], "step": 0.01}},
        ],
        "keep": ["pes-scope"], "slug": "pes-step-dimers",
    },
}


def _msg(law, i, blocks):
    return {"id": f"msg_{law}_{i}", "type": "message", "role": "assistant", "model": "claude-opus-5",
            "content": [{"type": "tool_use", "id": f"toolu_{law}_{i}_{k}", "name": name, "input": {**inp, **WHY}}
                        for k, (name, inp) in enumerate(blocks)],
            "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1000 + i, "output_tokens": 200 + i}}


REASONS = {"escalate": "the pre-registered predictions held and the scope protocol shows the violation",
           "reject": "the predictions held but the target does not stand a decade above the committee, which a "
                     "disagreement law needs"}


def responses(law: str) -> list[dict]:
    sc = SCENARIOS[law]
    verdict = sc.get("verdict", "escalate")
    h = sc["hypothesis"]
    check = sc.get("check", law)
    out = [_msg(law, 0, [("propose_hypothesis", {**h, "check": check, "contract": sc["suite"]["name"],
                                                 "basis": "disagreement" if check == "dimer_tail" else "exact",
                                                 "importance": 0.8, "severity": 1.0})]),
           _msg(law, 1, [("preregister", {"hypothesis": "H1", "predictions": sc["predictions"]})]),
           _msg(law, 2, [("request_probe", {"hypothesis": "H1", "protocol": p["name"]}) for p in sc["predictions"]]),
           _msg(law, 3, [("render_verdict", {"hypothesis": "H1", "verdict": verdict,
                                            "reasons": [REASONS[verdict]]})])]
    if verdict == "escalate":
        out.append(_msg(law, 4, [("write_protocol", {"hypothesis": "H1", "slug": sc["slug"], "protocols": sc["keep"]})]))
    return out


if __name__ == "__main__":
    for law, sc in SCENARIOS.items():
        (HERE / f"{law}.json").write_text(json.dumps({"suite": sc["suite"], "check": sc.get("check", law),
                                                       "verdict": sc.get("verdict", "escalate"),
                                                       "responses": responses(law)}, indent=1)
                                          + "\n")
