"""Write the recorded Anthropic responses for the replay test (hand-written in the Messages API format)."""
import json, sys
from pathlib import Path

OUT = Path(__file__).parent / "anthropic"
OUT.mkdir(parents=True, exist_ok=True)
n = [0]

def msg(blocks, usage):
    n[0] += 1
    content = []
    for i, (name, inp) in enumerate(blocks):
        content.append({"type": "tool_use", "id": f"toolu_{n[0]:02d}{i}", "name": name, "input": inp})
    return {"id": f"msg_{n[0]:02d}", "type": "message", "role": "assistant", "model": "claude-opus-5",
            "content": content, "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}

R = []
scope = {"elements": ["Co", "Pd", "Fe", "Ni"], "sites": ["dimer"], "structures": ["Co-Co", "Pd-Pd", "Fe-Ni"],
         "conditions": ["r < r_eq", "transition-metal pairs"]}
R.append(msg([("propose_hypothesis", {
    "statement": "Transition-metal dimers collapse below 0.6 A on the target.",
    "check": "repulsive_wall", "contract": "small-wall", "basis": "exact", "scope": scope,
    "mechanism": "no short-range training data for transition-metal pairs", "importance": 0.9, "severity": 4.2,
    "reason": "the wall fails on every transition-metal pair", "context": "evidence of small-wall"})], (2114, 287)))
R.append(msg([("propose_hypothesis", {
    "statement": ("The target's repulsive wall collapses for transition-metal pairs: small-wall max v/tau 1.63e+04 "
                  "[e:1] on the target, with Fe-Fe at v/tau 1.63e+04 [e:2] and Ni-Ni at v/tau 1.63e+04 [e:3], while "
                  "main-group pairs keep the wall; Co-Co, Pd-Pd and Fe-Ni, never evaluated, should collapse too."),
    "check": "repulsive_wall", "contract": "small-wall", "basis": "exact", "scope": scope,
    "mechanism": "no short-range training data for transition-metal pairs: the pair energy turns over inside r_eq",
    "importance": 0.9, "severity": 4.2,
    "reason": "an exact-constraint violation (max v/tau 1.63e+04 [e:1]) confined to transition-metal pairs",
    "context": "evidence of small-wall; the committee keeps the wall (max v/tau 0.00 [e:5])"})], (2671, 402)))
bad_pred = [{"name": "tm-scope", "kind": "scope", "target": "fail", "committee": "pass",
             "rationale": "unseen transition-metal pairs",
             "protocol": {"check": "repulsive_wall", "description": "{{ config.__class__ }}",
                          "pairs": [["Co", "Co"]], "tolerance": {"drop": 0.01}}}]
R.append(msg([("preregister", {"hypothesis": "H1", "predictions": bad_pred,
                               "reason": "test unseen pairs", "context": "H1"})], (3190, 318)))
good = [
    {"name": "tm-scope", "kind": "scope", "target": "fail", "committee": "pass",
     "rationale": "transition-metal pairs never evaluated collapse on the target, not on the committee",
     "protocol": {"check": "repulsive_wall", "hard": True, "basis": "exact",
                  "description": "scope of H1: unseen transition-metal pairs",
                  "pairs": [["Co", "Co"], ["Pd", "Pd"], ["Fe", "Ni"]], "r_inner": 0.3, "step": 0.1,
                  "tolerance": {"drop": 0.01}}},
    {"name": "tm-control", "kind": "control", "target": "pass", "committee": "any",
     "rationale": "main-group pairs never evaluated keep the wall on the target",
     "protocol": {"check": "repulsive_wall", "hard": True, "basis": "exact",
                  "description": "control of H1: unseen main-group pairs",
                  "pairs": [["N", "N"], ["F", "F"], ["C", "N"]], "r_inner": 0.3, "step": 0.1,
                  "tolerance": {"drop": 0.01}}},
    {"name": "tm-finer", "kind": "mechanism", "target": "fail", "committee": "any",
     "rationale": "one factor varied: the grid step halved on Ni-Ni",
     "protocol": {"check": "repulsive_wall", "hard": True, "basis": "exact",
                  "description": "mechanism of H1: Ni-Ni on a finer grid",
                  "pairs": [["Ni", "Ni"]], "r_inner": 0.3, "step": 0.05, "tolerance": {"drop": 0.01}}},
]
R.append(msg([("preregister", {"hypothesis": "H1", "predictions": good,
                               "reason": "scope, control and one-factor mechanism protocols on unseen configurations",
                               "context": "H1 and the refused templated description"})], (3655, 941)))
R.append(msg([("request_probe", {"hypothesis": "H1", "protocol": name, "reason": f"run {name} as pre-registered",
                                 "context": "pre-registration of H1"}) for name in ("tm-scope", "tm-control", "tm-finer")],
             (4702, 256)))
VERDICT_REASONS = json.loads(sys.argv[1]) if len(sys.argv) > 1 else ["placeholder"]
R.append(msg([("render_verdict", {
    "hypothesis": "H1", "verdict": "escalate", "reasons": VERDICT_REASONS,
    "domain_boundary": "near-equilibrium MD and relaxations that never push transition-metal atoms together",
    "confounds": ["grid discretisation: tm-finer still violates the wall", "protocol artefact: the committee keeps the wall"],
    "reason": "every pre-registered prediction held", "context": "probe results of tm-scope, tm-control, tm-finer"})],
    (6120, 388)))
R.append(msg([("write_protocol", {"hypothesis": "H1", "slug": "transition-metal-wall",
                                  "protocols": ["tm-scope", "tm-finer"],
                                  "reason": "the target violates both and the committee keeps the wall",
                                  "context": "escalation of H1"})], (6555, 141)))
for i, r in enumerate(R):
    (OUT / f"{i + 1:02d}_{r['content'][0]['name']}.json").write_text(json.dumps(r, indent=1) + "\n")
print(len(R), "responses")
