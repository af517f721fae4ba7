"""Every law's reference card, settled on a finding of that law's mutant.

The reference engine of the fast tests is the mutant's own clean base calculator (the model without its planted
defect): a reference that obeys every law. A card that settles the law must therefore CONFIRM each mutant's
finding, with the reference's value inside the law's own tolerance; a card that is not run here must say why,
decide nothing and write its configurations as inputs for an external code. A few real PySCF runs (PBE/STO-3G,
tiny molecules, about a second each) check the molecular cards against an electronic-structure reference.
"""

import importlib
import importlib.util
import re

import pytest
from ase.io import read

from pytest_mlip.laws import LAWS
from pytest_mlip.reference import engines as E
from pytest_mlip.reference.cards import CONFIRMED, UNDECIDED, card_for
from pytest_mlip.reference.settle import Budget, settle_verdict
from pytest_mlip.testing import builtin_contracts, run_contract


def _factory(spec: str):
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


class BaseEngine(E.Engine):
    """The reference: the energy of the mutant's clean base calculator (periodic and isolated systems)."""

    name = "base"
    module = "json"
    extra = "nothing to install"
    periodic = True
    mutant = ""
    calls = 0

    @classmethod
    def default_method(cls):
        return E.Method(engine="base", functional="clean base of the mutant", basis="-")

    def compute(self, atoms, deadline=None):
        type(self).calls += 1
        calc = _factory(self.mutant)().base
        work = atoms.copy()
        work.calc = calc
        return E.Result(float(work.get_potential_energy()), True, 0.0, E.unpaired(atoms), {})


def settled(contract: str, tmp_path, engine=None, **overrides):
    """The mutant's failing verdict on ``contract`` (narrowed by ``overrides``), settled against ``engine``."""
    settings = builtin_contracts()[contract]
    settings = type(settings).model_validate({**settings.model_dump(), **overrides})
    mutant = LAWS[settings.check].mutant
    verdict = run_contract(settings, mutant)
    assert verdict.status == "fail", (contract, verdict.reason)
    if engine is None:
        BaseEngine.mutant, BaseEngine.calls = mutant, 0
        engine = BaseEngine()
    out = settle_verdict(verdict, settings, engine, None, Budget(None), inputs=tmp_path / "inputs")
    assert out, f"{contract}: no failing probe was settled"
    return settings, verdict, out


RUN_HERE = [
    ("rotation-invariance", {"structures": [{"kind": "molecule", "name": "NH3"}]}),
    ("zero-net-force", {"structures": [{"kind": "molecule", "name": "H2O", "rattle": 0.05}]}),
    ("dissociation-limit", {"pairs": [[{"kind": "molecule", "name": "H2O"}, {"kind": "molecule", "name": "CH4"}]]}),
    ("energy-force-consistency", {"structures": [{"kind": "molecule", "name": "H2O", "rattle": 0.05}]}),
    ("stress-strain-consistency", {"structures": [{"kind": "bulk", "name": "Cu", "cubic": True, "rattle": 0.03}]}),
    ("pes-smoothness", {"pairs": [("Cu", "Cu")], "surfaces": []}),
    ("adsorption-sign", {"metals": ["Ni"], "adsorbates": ["O"], "relax_sites": 1}),
]


@pytest.mark.parametrize("contract,overrides", RUN_HERE, ids=[c for c, _ in RUN_HERE])
def test_a_card_run_here_confirms_its_mutant_against_the_clean_reference(contract, overrides, tmp_path):
    settings, verdict, out = settled(contract, tmp_path, **overrides)
    card = card_for(settings.check)
    assert card.engines and not card.not_run_here
    st = out[0]
    assert st.decision == CONFIRMED, (st.reason, st.observables, st.model_value)
    assert BaseEngine.calls == len(st.points) == len(card.configurations(settings, _case(verdict, settings, st)))
    ref = st.observables[card.quantity]
    # the clean reference obeys the law: its own value of the quantity is within the law's tolerance of the truth
    worst = verdict.worst()
    assert st.model_value == pytest.approx(({**worst.violations, **worst.observables})[card.quantity])
    assert abs(st.model_value - ref) > st.band["half_width"] >= verdict.tolerance[card.floor_tolerance]
    dec = next(a for a in st.artifacts if a.kind == "reference_decision")
    assert dec.value == CONFIRMED and dec.params["quantity"] == card.quantity and st.inputs is None


def _case(verdict, settings, st):
    from pytest_mlip.laws import CHECKS
    from pytest_mlip.reference.cards import ProbeCase

    p = next(p for p in verdict.probes if p.probe == st.probe)
    built = {b.id: b for b in CHECKS[verdict.check]().probes(settings)}[p.probe]
    return ProbeCase(verdict.contract, p.probe, built, {**p.violations, **p.observables}, worst_atoms=p.atoms,
                     tolerance=dict(verdict.tolerance))


def test_a_clean_reference_obeys_the_laws_it_settles(tmp_path):
    """The reference values themselves: the clean base's symmetry, net force and additivity are zero to rounding."""
    for contract, overrides in RUN_HERE[:3]:
        _, _, out = settled(contract, tmp_path, **overrides)
        q = out[0].quantity
        assert out[0].observables[q] < 1e-6, (contract, out[0].observables)


NOT_RUN = [
    ("determinism", {"structures": [{"kind": "molecule", "name": "H2O"}]}),
    ("jacobian-symmetry", {"structures": [{"kind": "molecule", "name": "H2O", "rattle": 0.05}]}),
    ("nve-conservation", {"structures": [{"kind": "molecule", "name": "CH3CH2OH"}], "temperatures": [300.0],
                          "steps": 100}),
    ("compression-wall", {"crystals": [{"element": "Cu", "structure": "fcc"}]}),
    ("born-stability", {}),
]


@pytest.mark.parametrize("contract,overrides", NOT_RUN, ids=[c for c, _ in NOT_RUN])
def test_a_card_not_run_here_says_why_and_writes_the_inputs(contract, overrides, tmp_path):
    if contract == "born-stability":
        overrides = {"structures": [s.model_dump() for s in builtin_contracts()[contract].structures[:1]]}
    settings, verdict, out = settled(contract, tmp_path, **overrides)
    card = card_for(settings.check)
    st = out[0]
    assert card.not_run_here and card.engines.startswith("none")
    assert st.decision == UNDECIDED and st.reason.startswith(f"not run here: {card.not_run_here}")
    assert BaseEngine.calls == 0 and not st.points
    folder = tmp_path / "inputs" / re.sub(r"[^A-Za-z0-9_.@+-]+", "_", settings.name)
    frames = read(next(folder.iterdir()) / "configurations.extxyz", index=":")
    assert st.inputs and str(folder) in st.inputs and st.inputs in st.reason
    assert len(frames) == len(card.configurations(settings, _case(verdict, settings, st))) >= 1
    sub = next(folder.iterdir())
    assert len(list((sub / "vasp").iterdir())) == len(frames) == len(list((sub / "qe").glob("*.pwi")))
    dec = next(a for a in st.artifacts if a.kind == "reference_decision")
    assert dec.value == UNDECIDED and card.not_run_here in dec.params["reason"]


def test_a_configuration_outside_the_engine_writes_the_inputs_too(tmp_path):
    """A slab card asked of a molecular engine: undecided, with the inputs for a periodic code written."""
    if importlib.util.find_spec("pyscf") is None:
        pytest.skip("pyscf not installed: pip install 'pytest-mlip[reference]'")
    _, _, out = settled("stress-strain-consistency", tmp_path, engine=E.engine("pyscf"),
                        structures=[{"kind": "bulk", "name": "Cu", "cubic": True, "rattle": 0.03}])
    st = out[0]
    assert st.decision == UNDECIDED and "outside the engine's domain" in st.reason and "gpaw" in st.reason
    assert st.inputs and "inputs for an external code written to" in st.reason
    assert len(read(f"{st.inputs}/configurations.extxyz", index=":")) == 2


def test_every_law_has_a_card_that_names_its_engine_or_why_not():
    for name, law in LAWS.items():
        card = card_for(name)
        assert card is not None and law.reason("reference") == "", name
        assert card.engines and card.quantity and card.table, name
        assert card.engines.startswith("none") == bool(card.not_run_here), name


STO3G = E.Method(engine="pyscf", functional="PBE", basis="sto-3g", mode="molecular", conv_tol=1e-9, max_cycle=100)
PYSCF_CASES = [
    ("rotation-invariance", {"structures": [{"kind": "molecule", "name": "NH3"}]}),
    ("zero-net-force", {"structures": [{"kind": "molecule", "name": "H2O", "rattle": 0.05}]}),
    # a non-polar partner: H2O+NH3 at 12 A keeps a real dipole-dipole interaction in the reference itself, 8.9e-4 eV
    # (STO-3G) and 9.6e-4 eV (def2-SVP), just under tau (1e-3 eV); H2O+CH4 adds up to 1e-7 eV
    ("dissociation-limit", {"pairs": [[{"kind": "molecule", "name": "H2O"}, {"kind": "molecule", "name": "CH4"}]]}),
    ("energy-force-consistency", {"structures": [{"kind": "molecule", "name": "H2O", "rattle": 0.05}]}),
]


@pytest.mark.skipif(importlib.util.find_spec("pyscf") is None,
                    reason="pyscf not installed: pip install 'pytest-mlip[reference]'")
@pytest.mark.parametrize("contract,overrides", PYSCF_CASES, ids=[c for c, _ in PYSCF_CASES])
def test_pyscf_settles_the_molecular_cards(contract, overrides, tmp_path):
    """PBE/STO-3G: the reference obeys rotation invariance, zero net force and additivity within tau, so each
    mutant's violation is confirmed as the model's; its force at the worst component confirms the planted force."""
    settings, verdict, out = settled(contract, tmp_path, engine=E.PySCF(STO3G), **overrides)
    st = out[0]
    assert all(p["converged"] for p in st.points), st.points
    assert st.decision == CONFIRMED, (st.reason, st.observables, st.model_value)
    card = card_for(settings.check)
    if card.quantity != "F_model":  # the law's own violation, measured on the reference
        assert st.observables[card.quantity] < verdict.tolerance[card.floor_tolerance]
    point = next(a for a in st.artifacts if a.kind == "reference")
    assert point.params["engine"] == "pyscf" and point.params["basis"] == "sto-3g"


@pytest.mark.skipif(importlib.util.find_spec("pyscf") is None,
                    reason="pyscf not installed: pip install 'pytest-mlip[reference]'")
def test_verify_an_escalation_of_a_law_whose_card_is_not_run_here(tmp_path):
    """`pytest-mlip verify` on a determinism escalation: undecided, the reason in verification.md, inputs written."""
    import json

    from pytest_mlip.cli import main

    folder = tmp_path / "h1-determinism"
    folder.mkdir()
    table = {"name": "h1-determinism-scope", "check": "determinism", "hard": True, "basis": "exact",
             "structures": [{"kind": "molecule", "name": "H2O"}], "repeats": 2}
    (folder / "reproduce.py").write_text(f"MODELS = [{LAWS['determinism'].mutant!r}]\nPROTOCOL = None\n"
                                         f"TABLES = {json.dumps([table])}\n")
    assert main(["verify", str(folder), "--engine", "pyscf"]) == 0
    out = json.loads((folder / "reference" / "verification.json").read_text())
    row = out["decisions"][0]
    assert row["decision"] == UNDECIDED and row["reason"].startswith("not run here: ") and not row["points"]
    assert (folder / "reference" / "inputs" / "h1-determinism-scope" / "H2O" / "configurations.extxyz").is_file()
    assert "not run here" in (folder / "reference" / "verification.md").read_text()
