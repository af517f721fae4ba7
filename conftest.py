"""Repository-root conftest: keep benchmarks, agent output and test data out of the unit-test run.

tests/data/user_project/ holds a user's test file (the mlip_model / mlip_check example) that the
tests run through pytester; collected here it would only skip, and its module name would clash
with the copies pytester makes.
"""

collect_ignore = ["benchmarks", "build", "tests/data"]
