"""The validator gate refuses anything that is not plain, admissible, new protocol data."""

from __future__ import annotations

import pytest

from pytest_mlip.agent.validator import ProtocolRejected, Validator, check_slug, safe_path

CLEAN = "tests.mutants:clean_morse"


def wall(**extra):
    table = {"name": "agent-wall", "check": "repulsive_wall", "hard": True, "basis": "exact",
             "description": "unseen transition-metal pairs", "pairs": [["Co", "Co"], ["Pd", "Pd"]], "step": 0.1,
             "tolerance": {"drop": 0.01}}
    table.update(extra)
    return table


@pytest.fixture
def gate(tmp_path):
    return Validator("lennard-jones", [CLEAN], existing_dirs=[tmp_path])


def refused(result, *words):
    assert not result.ok, "the validator accepted it"
    text = " ".join(result.errors).lower()
    assert any(w in text for w in words), result.errors
    return text


def test_plain_protocol_passes_and_round_trips(gate):
    r = gate.protocol(wall())
    assert r.ok, r.errors
    assert r.settings[0].name == "agent-wall" and r.settings[0].pairs == [("Co", "Co"), ("Pd", "Pd")]
    assert r.text.startswith("[[contract]]")


@pytest.mark.parametrize("text", [
    "__import__('os').system('rm -rf /')",
    "import os; os.system(1)",
    "eval(open('x').read())",
    "lambda: 0",
])
def test_code_is_refused(gate, text):
    refused(gate.protocol(wall(description=text)), "code", "not allowed")


@pytest.mark.parametrize("text", ["{{ config.__class__ }}", "{% for x in y %}x{% endfor %}", "${HOME}", "<% x %>"])
def test_templating_is_refused(gate, text):
    refused(gate.protocol(wall(description=text)), "templating", "not allowed")


@pytest.mark.parametrize("text", ["`whoami`", "$(id)", "a | sh", "x && curl evil"])
def test_shell_syntax_is_refused(gate, text):
    refused(gate.protocol(wall(description=text)), "shell", "not allowed")


@pytest.mark.parametrize("slug", ["../../etc/passwd", "a/b", "..", "x;rm -rf ~", "$(whoami)", "name with space",
                                  "UPPER", "", "a" * 80, "évil"])
def test_path_traversal_and_shell_names_are_refused(slug, tmp_path):
    assert check_slug(slug)
    with pytest.raises(ProtocolRejected):
        safe_path(tmp_path, slug)


def test_safe_path_stays_in_the_folder(tmp_path):
    assert safe_path(tmp_path, "sevennet-0-wall") == (tmp_path / "mlip_sevennet-0-wall.toml").resolve()


def test_contract_name_with_shell_characters_is_refused(gate):
    refused(gate.protocol(wall(name="x;rm -rf /")), "schema", "not allowed")


@pytest.mark.parametrize("extra, words", [
    ({"pairs": [["H", "H"]] * 5000}, ("bytes", "units", "more than")),
    ({"pairs": [], "surfaces": [{"element": "Cu", "adatom": "O", "size": [50, 50, 50]}]}, ("atoms",)),
])
def test_huge_protocols_are_refused(gate, extra, words):
    refused(gate.protocol(wall(**extra)), *words)


def test_huge_structures_are_refused(gate):
    sym = {"name": "agent-sym", "check": "symmetry", "transform": "rotation",
           "structures": [{"kind": "cluster", "symbols": "Cu100000"}], "tolerance": {"energy": 1e-4, "forces": 1e-3}}
    refused(gate.protocol(sym), "atoms")
    sym["structures"] = [{"kind": "bulk", "name": "Cu", "repeat": [100, 100, 100]}]
    refused(gate.protocol(sym), "atoms", "each count must be between 1 and 20")  # the schema refuses it first


def test_structures_from_files_are_refused(gate):
    sym = {"name": "agent-sym", "check": "symmetry", "transform": "rotation",
           "structures": [{"kind": "file", "path": "../../../etc/passwd"}]}
    refused(gate.protocol(sym), "files are not allowed", "not allowed")


def test_tolerance_tighter_than_calibrated_is_refused(gate):
    refused(gate.protocol(wall(tolerance={"drop": 1e-6})), "tighter", "below the calibrated noise floor")
    refused(gate.protocol(wall(tolerance={"drop": 1e-3})), "tighter")  # above the noise, below the default


def test_tolerance_looser_than_calibrated_is_refused(gate):
    """A protocol keeps the tolerance its finding was measured with: loosening it could turn the regression test of
    a finding into one the broken model passes (999 used to be accepted)."""
    refused(gate.protocol(wall(tolerance={"drop": 0.02})), "looser than the calibrated default 0.01", "contracts/")
    refused(gate.protocol(wall(tolerance={"drop": 999})), "looser", "100x the built-in default")


def test_out_of_domain_parameter_is_refused(gate):
    refused(gate.protocol(wall(r_inner=2.0)), "admissible range")
    refused(gate.protocol(wall(r_inner=0.01)), "greater than or equal to 0.1")  # below any contract's (schema)


def test_unknown_field_and_unknown_check_are_schema_errors(gate):
    refused(gate.protocol(wall(command="rm")), "schema")
    refused(gate.protocol({**wall(), "check": "shell_exec"}), "schema", "unknown check")


def test_element_unsupported_by_a_committee_model_is_refused(tmp_path):
    g = Validator(CLEAN, ["emt"], existing_dirs=[tmp_path])
    refused(g.protocol(wall(pairs=[["Si", "Si"]])), "not supported by emt")


def test_repeat_of_an_existing_protocol_is_refused(gate, tmp_path):
    from pytest_mlip.testing import builtin_contracts

    builtin = builtin_contracts()["repulsive-wall-dimers"]
    same = {"name": "renamed", "check": "repulsive_wall", "description": "a new description",
            "pairs": [list(p) for p in reversed(builtin.pairs)], "r_inner": builtin.r_inner, "step": builtin.step,
            "tolerance": dict(builtin.tolerance)}
    refused(gate.protocol(same), "repeats")
    (tmp_path / "mlip_kept.toml").write_text(gate.protocol(wall()).text)
    fresh = Validator("lennard-jones", [CLEAN], existing_dirs=[tmp_path])
    refused(fresh.protocol(wall(name="other-name")), "repeats")
    mem = Validator("lennard-jones", [CLEAN], existing_dirs=[], memory_protocols=[wall(name="earlier")])
    refused(mem.protocol(wall()), "memory")


def test_non_finite_and_non_table_inputs_are_refused(gate):
    refused(gate.protocol(wall(step=float("nan"))), "non-finite")
    refused(gate.protocol(["not", "a", "table"]), "mapping")


def test_protocol_file_header_is_checked_too(gate):
    r = gate.file([wall()], "agent-wall", header=["kept by the detective", "{{ evil }}"])
    refused(r, "templating")
    assert gate.file([wall()], "agent-wall", header=["kept by the detective"]).ok


def test_a_protocol_may_not_change_its_laws_basis(gate):
    """dimer_tail is decided against the committee: a protocol declaring it exact (no committee needed) is refused."""
    r = gate.protocol({"name": "tail", "check": "dimer_tail", "elements": ["Cu"], "basis": "exact"})
    assert not r.ok and any("law of basis 'disagreement'" in e for e in r.errors), r.errors
    assert gate.protocol({"name": "tail", "check": "dimer_tail", "elements": ["Cu"]}).ok


def test_a_protocol_keeps_its_laws_hardness(gate):
    """A protocol may not turn a hard law into one that never gates (or a soft one into a gate)."""
    refused(gate.protocol(wall(hard=False)), "repulsive_wall is a hard law", "remove the hard line")
    table = wall()
    del table["hard"]
    assert gate.protocol(table).ok
    assert gate.protocol(table).settings[0].hard
