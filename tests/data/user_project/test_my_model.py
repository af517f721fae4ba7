"""A model developer's own tests with pytest-mlip's fixtures (README: "Writing your own tests").

Run with ``pytest --mlip=MODEL test_my_model.py``: each test runs once per model
(the target, then each committee member).
"""

from ase.build import bulk
from ase.optimize import BFGS


def test_copper_wall(mlip_model, mlip_check):
    """A fixed check with my own setting: the Cu-Cu dimer's repulsive wall."""
    mlip_check("repulsive_wall", pairs=[["Cu", "Cu"]])


def test_rotation_of_my_molecule(mlip_model, mlip_check):
    """A built-in contract with one setting overridden."""
    mlip_check("rotation-invariance", structures=[{"kind": "molecule", "name": "CH3OH"}])


def test_copper_relaxes_to_a_minimum(mlip_model):
    """Any ASE workflow: calls go through the evaluator (cached, recorded in the provenance store)."""
    if "Cu" not in (mlip_model.info.elements or ("Cu",)):
        return
    atoms = bulk("Cu", "fcc", a=3.7, cubic=True)
    atoms.rattle(0.02, seed=1)
    atoms.calc = mlip_model.calc
    BFGS(atoms, logfile=None).run(fmax=0.05, steps=100)
    assert abs(atoms.get_forces()).max() < 0.05
