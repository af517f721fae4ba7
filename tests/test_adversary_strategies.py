"""Public Hypothesis strategies draw only admissible structures."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mlip.strategies import clusters, dimers, domain_points, slab_adsorbate, strained_bulk

FAST = settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(dimers(elements=("Cu", "O"), r=(0.6, 2.5)))
def test_dimers_in_range(atoms):
    assert len(atoms) == 2 and set(atoms.get_chemical_symbols()) <= {"Cu", "O"}
    assert 0.6 - 1e-9 <= atoms.get_distance(0, 1) <= 2.5 + 1e-9


@FAST
@given(clusters(elements=("Cu", "Ni"), n=(2, 7), min_distance=2.2))
def test_clusters_keep_min_distance(atoms):
    d = atoms.get_all_distances() + 100 * np.eye(len(atoms))
    assert 2 <= len(atoms) <= 7 and d.min() >= 2.2 - 1e-9 and not atoms.pbc.any()


@FAST
@given(clusters("Cu3Ni3", min_distance=2.0, box=6.0))
def test_cluster_in_a_box(atoms):
    assert atoms.get_chemical_formula() == "Cu3Ni3"
    span = atoms.positions.max(axis=0) - atoms.positions.min(axis=0)
    assert span.max() <= 6.0 + 1e-9


def test_cluster_that_cannot_fit_is_a_one_line_error():
    with pytest.raises(ValueError, match="no admissible point") as exc:
        clusters("Cu8", min_distance=3.0, box=2.0)
    assert "\n" not in str(exc.value)


@FAST
@given(strained_bulk("Si", crystalstructure="diamond", a=5.43, max_strain=0.03, rattle=0.04))
def test_strained_bulk_within_bounds(atoms):
    from ase.build import bulk

    ref = bulk("Si", "diamond", a=5.43, cubic=True)
    deformation = np.linalg.solve(ref.cell.array, atoms.cell.array)  # I + eps
    eps = deformation - np.eye(3)
    assert np.allclose(eps, eps.T) and np.abs(eps).max() <= 0.03 + 1e-9
    frac = ref.get_scaled_positions() @ atoms.cell.array
    assert np.abs(atoms.positions - frac).max() <= 0.04 + 1e-9


@FAST
@given(slab_adsorbate("Cu", "fcc111", "CO", height=(1.2, 3.0)))
def test_slab_adsorbate_height(atoms):
    n_slab = 12
    top = atoms.positions[:n_slab, 2].max()
    lowest = atoms.positions[n_slab:, 2].min()
    assert len(atoms) == 14 and 1.2 - 1e-9 <= lowest - top <= 3.0 + 1e-9


@FAST
@given(st.data())
def test_domain_points_are_admissible(data):
    from pytest_mlip.adversary.objectives import SymmetryProblem
    from pytest_mlip.adversary.domains import DisplacementDomain
    from ase.build import molecule

    atoms = molecule("H2O")
    atoms.center(vacuum=5.0)
    p = SymmetryProblem(atoms, "rotation", DisplacementDomain(delta=0.6, min_distance=0.9), {"energy": 1e-4},
                        [], "H2O")
    x = data.draw(domain_points(p))
    assert p.admissible(x) is None
