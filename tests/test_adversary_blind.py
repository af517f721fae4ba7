"""The adversary on models that offer values only (no autograd, forces not claimed to be -dE/dx).

Planted narrow defects (tests/mutants/blind.py) that the sampled checks miss:
the search, paying for every gradient in finite differences, scans each
start's reduced coordinates coarse to fine before ascending, and finds them
within a budget where uniform random search does not. The benchmark
(benchmarks/adversary_blind_benchmark.py) measures evaluations to first
success over seeds; these tests pin the behaviour at small budgets.
"""

import pytest
import torch  # noqa: F401  (imported before any in-process pytester run)

from pytest_mlip.adversary.objectives import objective_for
from pytest_mlip.adversary.runner import run_adversary
from pytest_mlip.adversary.search import Search, SearchOptions
from pytest_mlip.evaluation import evaluator_for
from pytest_mlip.testing import builtin_contracts, run_contract

B = "tests.mutants.blind"
C = builtin_contracts()
WALL = C["repulsive-wall-dimers"].model_copy(update={"pairs": [("C", "C"), ("O", "O")]})
TAIL = C["dissociation-limit"].model_copy(update={"pairs": C["dissociation-limit"].pairs[:1]})


def test_blind_models_offer_values_only():
    """No autograd backend and no force gradient: every problem's gradient would be a finite difference."""
    for model, settings in ((f"{B}:BlindAngularHole", WALL), (f"{B}:TailBump", TAIL)):
        ev = evaluator_for(model)
        problems, _ = objective_for(settings.check).problems(settings, ev)
        search = Search(problems, ev, SearchOptions(budget=10))
        assert search.autograd is None and all(search.values_only(i) for i in range(len(problems)))
    ev = evaluator_for("tests.mutants.narrow:AngularHole")  # the same defect with autograd: no scans
    problems, _ = objective_for("repulsive_wall").problems(WALL, ev)
    assert not Search(problems, ev, SearchOptions(budget=10)).values_only(0)


@pytest.mark.parametrize("settings, model, budget", [
    (WALL, f"{B}:BlindAngularHole", 300),  # 4 coordinates, all of which matter
    (TAIL, f"{B}:TailBump", 200),  # an interaction 7.3 A out, past the declared 5 A cutoff
    (C["compression-wall"].model_copy(update={"crystals": C["compression-wall"].crystals[2:3]}),
     f"{B}:CompressionDip", 150),  # a pair dip every compressed crystal crosses at one scale
], ids=["angular-hole", "tail-bump", "compression-dip"])
def test_ascent_finds_narrow_defects_in_a_values_only_model(settings, model, budget):
    assert run_contract(settings, model).status == "pass"  # the sampled check misses it
    r = run_adversary(settings, evaluator_for(model), SearchOptions(budget=budget))
    assert r.status == "violation" and r.value > 1.0, (r.value, r.parameters)
    assert set(r.gradients) <= {"finite-differences"} and r.evaluations <= budget
    rand = run_adversary(settings, evaluator_for(model), SearchOptions(budget=budget, method="random"))
    assert rand.value < r.value


def test_narrow_tail_in_one_problem_is_found_where_random_search_misses_it():
    """The tail bump 0.5 mA wide between Ni atoms only: one problem of five holds it (about 5e-4 of Z violates:
    random search needs ~3000 evaluations on average); the survey's first level of each problem's gap scan shows
    its tail, the first start zooms in on it."""
    settings = C["dissociation-limit"]
    model = f"{B}:NarrowTailBump"
    sampled = run_contract(settings, model)
    assert sampled.status == "pass" and sampled.max_normalized < 1e-3  # the sampled check misses it
    r = run_adversary(settings, evaluator_for(model), SearchOptions(budget=200))
    assert r.status == "violation" and r.value > 1.0 and r.problem == "Ni+Ni", (r.value, r.problem)
    assert 7.28 < r.parameters["gap"] < 7.32 and r.first_exceed <= 200
    rand = run_adversary(settings, evaluator_for(model), SearchOptions(budget=200, method="random"))
    assert rand.value < 1.0


def test_survey_sends_the_first_start_to_the_problem_that_shows_the_tail():
    settings = C["dissociation-limit"]
    ev = evaluator_for(f"{B}:NarrowTailBump")
    problems, _ = objective_for("dissociation").problems(settings, ev)
    search = Search(problems, ev, SearchOptions(budget=600))
    pool = [(search.value(pi, x), pi, x) for pi, p in enumerate(problems) for x in p.seeds]
    assert problems[max(pool, key=lambda t: t[0])[1]].label != "Ni+Ni"  # at 12 A only rounding shows
    search.phase = "search"
    search.survey(pool)
    v, pi, x = max(pool, key=lambda t: t[0])
    assert problems[pi].label == "Ni+Ni" and 6.0 <= x[0] <= 8.3 and 1e-9 < v < 1.0, (problems[pi].label, x, v)
    assert search.spent <= 2 * 8 * len(problems)  # one level of the gap per problem: A+B and B, 8 new points


def test_compression_scales_go_straight_to_the_line_of_pairs():
    """The compression wall's problem has no variable beside the line's two scales: no coordinate scan (the line
    of pairs covers every point of it), the dip met within 80 evaluations (with the scans first: 97)."""
    settings = C["compression-wall"].model_copy(update={"crystals": C["compression-wall"].crystals[2:3]})
    ev = evaluator_for(f"{B}:CompressionDip")
    problems, _ = objective_for("compression_wall").problems(settings, ev)
    search = Search(problems, ev, SearchOptions(budget=150)).run()
    assert search.scans == 0 and search.lines and search.first_exceed is not None and search.first_exceed <= 80


def test_finite_difference_gradient_of_rounding_is_zero():
    """Where v differs only by float rounding (fragments beyond the clean model's cutoff), no direction is
    followed: the gradient is zero and the start ends."""
    settings = C["dissociation-limit"]
    ev = evaluator_for(f"{B}:BlindClean")
    problems, _ = objective_for("dissociation").problems(settings, ev)
    search = Search(problems, ev, SearchOptions(budget=600))
    search.phase = "search"
    for pi, p in enumerate(problems):
        g = search.fd_gradient(pi, p.seeds[0])
        assert g is not None and not g.any(), (p.label, g)


@pytest.mark.slow
def test_ascent_finds_the_height_bump_in_a_values_only_model():
    """~30 s: a 13-atom slab per evaluation."""
    settings = C["repulsive-wall-surface"]
    model = f"{B}:BlindHeightBump"
    assert run_contract(settings, model).status == "pass"
    r = run_adversary(settings, evaluator_for(model), SearchOptions(budget=120))
    assert r.status == "violation" and r.first_exceed <= 120


def test_scans_count_against_the_budget_and_stay_in_z():
    settings = WALL
    ev = evaluator_for(f"{B}:BlindAngularHole")
    problems, _ = objective_for("repulsive_wall").problems(settings, ev)
    seen = []
    value = Search.value

    class Checked(Search):
        def value(self, pi, x):
            seen.append(self.problems[pi].admissible(x))
            return value(self, pi, x)

    search = Checked(problems, ev, SearchOptions(budget=97, seed=4)).run()
    assert search.scans > 0 and search.spent <= 97 and seen and all(s is None for s in seen)


def test_deep_wall_dip_is_found_by_the_line_scan_of_pairs():
    """The isotropic dip 5 mA wide deep in the steep wall: the coordinate scan follows the clean slope past it,
    the line scan of pairs meets it once its spacing reaches the dip's width (before it: no seed found it in 600
    evaluations); a smaller budget reports it clean, never somewhere else."""
    settings = WALL.model_copy(update={"pairs": [("C", "C")]})
    assert run_contract(settings, f"{B}:WallDip").status == "pass"
    r = run_adversary(settings, evaluator_for(f"{B}:WallDip"), SearchOptions(budget=600))
    assert r.status == "violation" and 1.70 < r.parameters["r_in"] < 1.74, r.parameters
    small = run_adversary(settings, evaluator_for(f"{B}:WallDip"), SearchOptions(budget=30))
    assert small.status == "clean" or 1.70 < small.parameters["r_in"] < 1.74


def test_line_scan_reads_pairs_from_single_evaluations():
    """Each new point of the line costs one evaluation; every pair of scanned points is then known, and the best
    pair is evaluated from the cache."""
    settings = WALL.model_copy(update={"pairs": [("C", "C")]})
    ev = evaluator_for(f"{B}:WallDip")
    problems, _ = objective_for("repulsive_wall").problems(settings, ev)
    search = Search(problems, ev, SearchOptions(budget=600, seed=1))
    search.phase = "search"
    p = problems[0]
    x0 = p.seeds[0]
    x, v = search.line_pairs(0, x0, -float("inf"))
    assert p.admissible(x) is None and v > 1.0
    assert search.spent <= 300 + 1  # at most half the budget, plus the first pair's second point
    assert search.line_pairs(0, x0, v) == (x0, v)  # a line already scanned is not scanned again
