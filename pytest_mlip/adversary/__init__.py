"""The adversary: a bounded search of each contract's admissible inputs Z for its largest violation.

After the sampled checks, ``pytest --mlip=NAME --mlip-adversary`` keeps the
model fixed and varies only admissible inputs z (dimer distances and bond
directions, displacements and rotations, fragment placements, strains,
adsorbate heights) to maximise the contract's normalised violation v(z),
computed from the model's own outputs. It reports the largest violation it
found, apart from the sampled gate (which it never changes unless
``--mlip-adversary-gate``), with the worst configuration and a script that
recomputes the number. It proves nothing about violations it did not find.

Modules: ``domains`` (typed Z a contract file states), ``problem`` (a
parameterised piece of Z and v on it), ``objectives`` (check name ->
objective registry), ``backends`` (autograd / model forces / finite
differences), ``search`` (seeded multi-start Adam ascent with projection, and
the random and ``hypothesis.target()`` baselines), ``runner`` (one contract x
model -> result and files), ``plugin`` (pytest options and items).

Heavy imports (torch) happen only when a search runs.
"""

__all__ = ["run_adversary", "SearchOptions", "OBJECTIVES"]


def __getattr__(name):
    if name == "run_adversary":
        from .runner import run_adversary

        return run_adversary
    if name == "SearchOptions":
        from .search import SearchOptions

        return SearchOptions
    if name == "OBJECTIVES":
        from .objectives import OBJECTIVES

        return OBJECTIVES
    raise AttributeError(name)
