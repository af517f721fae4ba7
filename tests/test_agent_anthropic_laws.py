"""The Anthropic planner's reach: its tools accept every law's playbook, and it pursues a hypothesis end to end on
the adsorption sign, the desorption barrier, the dimer tail and PES smoothness, on recorded responses.

``tests/data/agent/anthropic_laws/<law>.json`` holds a small suite (the evidence contract) and the Messages API
responses a model would send for one hypothesis on that law's planted defect (written by make.py beside them):
propose, pre-register a scope protocol and a control or mechanism protocol of that law, request both probes,
render the verdict, name the protocol to keep. The detective gathers the evidence, validates, runs and judges as
for any planner; the kept file must fail on the mutant and pass on the clean model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("anthropic")

from pytest_mlip.agent.anthropic_planner import AnthropicPlanner, replay_client, system_prompt  # noqa: E402
from pytest_mlip.agent.detective import Detective  # noqa: E402
from pytest_mlip.agent.protocols import to_toml  # noqa: E402

DATA = Path(__file__).parent / "data" / "agent" / "anthropic_laws"
#: law -> (target with the planted defect, clean committee model)
MODELS = {
    "adsorption_sign": ("tests.mutants.surface:UBlockShift", "tests.mutants.surface:clean_emt"),
    "desorption_barrier": ("tests.mutants.surface:DesorptionBump", "tests.mutants.surface:clean_emt"),
    "dimer_tail": ("tests.mutants.physics:LongTail", "tests.mutants:clean_morse"),
    "dimer_tail_band": ("tests.mutants.physics:LongTail", "tests.mutants:clean_morse"),
    "pes_smoothness": ("tests.mutants.physics:StepPair", "tests.mutants.physics:lennard_jones"),
}


def test_the_system_prompt_and_the_validator_open_every_law_with_a_playbook():
    from pytest_mlip.agent.validator import open_checks
    from pytest_mlip.laws import LAWS

    class Desk:
        target, committee = "t", []

    text = system_prompt(Desk)
    assert set(open_checks()) == set(LAWS) and len(LAWS) == 15
    for name in LAWS:
        assert f"- {name}: " in text and "Playbook: units a scope varies" in text


def test_preregister_accepts_a_protocol_of_every_law():
    """One table per law (its built-in contract narrowed to its last unit, renamed) passes the gate the preregister
    tool puts every protocol through: the validator opens all 15 laws to the planner."""
    from pytest_mlip.agent.playbook import playbook_for
    from pytest_mlip.agent.protocols import table_of
    from pytest_mlip.agent.validator import Validator
    from pytest_mlip.laws import LAWS
    from pytest_mlip.testing import builtin_contracts

    validator = Validator("lennard-jones", [], include_builtin=True)
    seen = set()
    for name, settings in builtin_contracts().items():
        if settings.check in seen:
            continue
        table = table_of(settings)
        for f in playbook_for(settings.check).unit_fields:
            if table.get(f):
                table[f] = table[f][-1:]
        table = {**table, "name": f"{name}-narrowed", "description": "one unit of the built-in contract"}
        gate = validator.protocol(table, where=table["name"])
        assert gate.ok, (name, gate.errors)
        seen.add(settings.check)
    assert seen == set(LAWS), set(LAWS) - seen


@pytest.fixture(scope="module", params=sorted(MODELS))
def pursued(request, tmp_path_factory):
    law = request.param
    data = json.loads((DATA / f"{law}.json").read_text())
    out = tmp_path_factory.mktemp(law)
    suite = out / "mlip_suite.toml"
    suite.write_text(to_toml([{**data["suite"], "description": f"small {law} suite"}]))
    target, clean = MODELS[law]
    requests: list = []
    planner = AnthropicPlanner(replay_client(data["responses"], requests))
    det = Detective(target, [clean], planner, out / "out", tests_dir=out / "generated_tests", max_hypotheses=1,
                    suite_files=[str(suite)], contracts=[data["suite"]["name"]], log=lambda msg: None)
    summary = det.run()
    return law, data, summary, planner, requests, out


@pytest.mark.slow
def test_the_planner_pursues_a_hypothesis_on_the_law(pursued):
    from pytest_mlip.contracts.files import parse_contracts
    from pytest_mlip.testing import run_contract

    law, data, summary, planner, requests, out = pursued
    assert len(requests) == len(data["responses"]) and not planner.refusals, planner.refusals
    (h,) = [x["hypothesis"] for x in summary.hypotheses]
    assert h.check == data["check"] and h.planner == "anthropic"
    assert [x["verdict"].verdict for x in summary.hypotheses] == [data["verdict"]]
    # the preregister prompt carried the law's playbook suggestions (fixed rules, already validated)
    prompt = requests[1]["messages"][-1]["content"][-1]["text"]
    assert f"The {data['check']} playbook" in prompt
    kept_files = sorted((out / "generated_tests").glob("mlip_*.toml"))
    if data["verdict"] != "escalate":
        assert not kept_files
        return
    (path,) = kept_files
    kept = parse_contracts(path)
    assert [s.check for s in kept] == [data["check"]]
    target, clean = MODELS[law]
    for s in kept:
        assert run_contract(s, target).status == "fail" and run_contract(s, clean).status == "pass"
