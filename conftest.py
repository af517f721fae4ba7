"""Repository-root conftest: keep benchmarks and agent output out of the unit-test run."""

collect_ignore = ["benchmarks", "build"]
