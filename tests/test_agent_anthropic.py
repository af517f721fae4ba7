"""The Anthropic planner end to end on recorded Messages API responses replayed through the SDK.

``tests/data/agent/anthropic/*.json`` are Messages API responses (tool_use blocks) written in the API's
format for this scenario, replayed in order by an ``httpx.MockTransport`` behind ``anthropic.Anthropic``.
They include a proposal with an uncited number and a pre-registration with templating syntax: both must be
refused and answered with an error tool_result before the corrected calls are accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("anthropic")

from pytest_mlip.agent.anthropic_planner import TOOLS, AnthropicPlanner, replay_client  # noqa: E402
from pytest_mlip.agent.detective import Detective  # noqa: E402

DATA = Path(__file__).parent / "data" / "agent"
RECORDED = sorted((DATA / "anthropic").glob("*.json"))
TARGET = "tests.mutants.agent:TransitionMetalWall"
CLEAN = "tests.mutants:clean_morse"


def responses():
    return [json.loads(p.read_text()) for p in RECORDED]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    out = tmp_path_factory.mktemp("llm")
    requests: list = []
    planner = AnthropicPlanner(replay_client(responses(), requests))
    det = Detective(TARGET, [CLEAN], planner, out / "out", tests_dir=out / "generated_tests", max_hypotheses=1,
                    suite_files=[str(DATA / "mlip_small_wall.toml")])
    summary = det.run()
    return out, summary, planner, requests


def test_recorded_tool_inputs_all_carry_reason_and_context():
    assert len(RECORDED) == 7
    for r in responses():
        for b in r["content"]:
            assert b["type"] == "tool_use" and b["name"] in {t["name"] for t in TOOLS}
            assert b["input"]["reason"].strip() and b["input"]["context"].strip()


def test_anthropic_planner_runs_end_to_end_on_recorded_responses(replayed):
    out, summary, planner, requests = replayed
    assert len(requests) == 7  # every recorded response consumed, no extra call
    assert [x["verdict"].verdict for x in summary.hypotheses] == ["escalate"]
    h = summary.hypotheses[0]["hypothesis"]
    assert h.planner == "anthropic" and h.key.startswith("small-wall:llm:")
    for req in requests:
        assert {t["name"] for t in req["tools"]} == {"propose_hypothesis", "preregister", "request_probe",
                                                      "render_verdict", "write_protocol"}
    # token usage summed from the responses' usage fields, and recorded in run.json
    want_in = sum(r["usage"]["input_tokens"] for r in responses())
    want_out = sum(r["usage"]["output_tokens"] for r in responses())
    assert (planner.usage.calls, planner.usage.input_tokens, planner.usage.output_tokens) == (7, want_in, want_out)
    run = json.loads((out / "out" / "run.json").read_text())
    assert run["tokens"]["input_tokens"] == want_in and run["planner"] == "anthropic"


def _results(request):
    return [b for b in request["messages"][-1]["content"] if b.get("type") == "tool_result"]


def test_uncited_number_and_templated_protocol_are_refused(replayed):
    _, _, planner, requests = replayed
    first = _results(requests[1])[0]
    assert first["is_error"] and "0.6 cites no artifact" in first["content"]
    second = _results(requests[3])[0]
    assert second["is_error"] and "templating" in second["content"]
    assert len(planner.refusals) == 2


def test_every_tool_call_is_audited_in_the_memory(replayed):
    from pytest_mlip.agent.memory import EvidenceMemory

    out = replayed[0]
    calls = [r["data"] for r in EvidenceMemory(out / "out" / "memory.jsonl").records("planner")]
    assert [c["tool"] for c in calls] == ["propose_hypothesis", "propose_hypothesis", "preregister", "preregister",
                                          "request_probe", "request_probe", "request_probe", "render_verdict",
                                          "write_protocol"]
    assert [c["accepted"] for c in calls].count(False) == 2
    assert all(c["input"]["reason"] and c["input"]["context"] for c in calls)


def test_report_of_the_llm_run_passes_the_judge(replayed):
    from pytest_mlip.reporting.judge import judge_file

    out, summary, _, _ = replayed
    report = summary.escalations[0].report_dir / "report.md"
    text = report.read_text()
    assert "[e:" not in text  # the planner's handles were resolved to artifact ids
    assert "planner `anthropic`" in text
    result = judge_file(report)
    assert result.ok, "\n".join(f.line() for f in result.failed)


def test_protocol_named_by_the_planner_bites(replayed):
    from pytest_mlip.contracts.files import parse_contracts
    from pytest_mlip.testing import run_contract

    out = replayed[0]
    path = out / "generated_tests" / "mlip_transition-metal-wall.toml"
    names = [s.name for s in parse_contracts(path)]
    assert names == ["tm-scope", "tm-finer"]
    for s in parse_contracts(path):
        assert run_contract(s, TARGET).status == "fail" and run_contract(s, CLEAN).status == "pass"


def _msg(i, name, inp):
    return {"id": f"msg_x{i}", "type": "message", "role": "assistant", "model": "claude-opus-5",
            "content": [{"type": "tool_use", "id": f"toolu_x{i}", "name": name, "input": inp}],
            "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}


def test_escalation_against_the_preregistration_is_refused():
    """The rules reject; the planner's escalate is refused, its corrected reject is accepted."""
    from pytest_mlip.agent.schema import AgentVerdict, Hypothesis, Prediction, Preregistration

    rule = AgentVerdict(hypothesis="H1", verdict="reject", reasons=["pre-registered prediction failed: x"])
    common = {"hypothesis": "H1", "reason": "r", "context": "c"}
    client = replay_client([_msg(1, "render_verdict", {**common, "verdict": "escalate", "reasons": ["looks bad"]}),
                            _msg(2, "render_verdict", {**common, "verdict": "confirm", "reasons": ["sure"]}),
                            _msg(3, "render_verdict", {**common, "verdict": "reject", "reasons": ["scope failed"]})])
    planner = AnthropicPlanner(client)

    class Desk:
        target, target_name, committee, evidence, suite = "t", "t", [], [], {}

        class ledger:
            @staticmethod
            def check_text(text, field, known=()):
                return []

        class memory:
            audit: list = []

            @staticmethod
            def records(kind):
                return []

            @classmethod
            def append(cls, kind, data, run=None):
                cls.audit.append((kind, data))

    h = Hypothesis(id="H1", key="k", statement="s", check="repulsive_wall", contract="c", importance=0.5,
                   severity=1.0)
    prereg = Preregistration(hypothesis="H1", predictions=[Prediction(name="p", kind="scope", target="fail",
                                                                      protocol={"check": "repulsive_wall"})])
    planner.system = "test"
    v = planner.review(Desk, h, prereg, {}, rule)
    assert v.verdict == "reject" and any("planner: scope failed" in r for r in v.reasons)
    assert len(planner.refusals) == 2
    assert "escalation refused" in planner.refusals[0] and "never confirm" in planner.refusals[1]
    audit = [d for k, d in Desk.memory.audit if k == "planner"]
    assert [d["accepted"] for d in audit] == [False, False, True]
