"""Reference calculations that settle a law's finding in the same run (``--mlip-reference``, ``pytest-mlip verify``).

- :mod:`.engines`: PySCF and GPAW single points of an ``ase.Atoms`` under a stated method (they name no law);
- :mod:`.cards`: one reference card per law, keyed by its check name (configurations, observables named as
  the model's, band with the measured method spread, the pre-registered decision table);
- :mod:`.settle`: computes a card for one probe with an engine (cached by configuration and method, within a
  budget) and turns every number into an artifact;
- :mod:`.plugin` (the pytest options), :mod:`.cli` (``pytest-mlip verify DIR``), :mod:`.report` (report.json
  entries).
"""
