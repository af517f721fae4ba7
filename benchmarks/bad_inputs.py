"""Bench of bad inputs and faults: does pytest-mlip answer each with a one-line error naming the fix?

Each case writes a small project into a temporary folder (a factory module wrapping EMT with one planted
corruption, a contract file, user files that must survive), runs ``python -m pytest`` there in a
subprocess (the interpreter that runs this script: run it with the venv you want to measure), and
classifies the outcome:

- ``one-line``: the expected exit code class and a message matching the case's pattern, no traceback;
- ``traceback``: a Python traceback reached the user (without ``--mlip-debug``);
- ``silent``: exit 0 where the run should fail, or no word of the problem (a wrong or misleading result);
- ``lost``: a file of the user's changed or vanished, or the store failed ``PRAGMA integrity_check``.

    python benchmarks/bad_inputs.py [-k SUBSTRING] [-j JOBS] [--json OUT]

prints one line per case and the counts per group. The cases are the development part of the bench
(operators x seeds written by the developer); held-out cases are invented separately.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

MODELS = r'''
import math, os, time, random
import numpy as np
from ase.calculators.calculator import Calculator, all_changes
from ase.calculators.emt import EMT

class Corrupt(Calculator):
    implemented_properties = ["energy", "forces", "stress"]
    mode = "clean"
    def __init__(self, **kw):
        super().__init__(**kw)
        self.base = EMT()
        self.mlip_metadata = {"cutoff": 6.0, "dtype": "float64"}
    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        a = self.atoms.copy()
        props = ["energy", "forces"] + (["stress"] if a.pbc.all() else [])
        self.base.calculate(a, props, all_changes)
        r = {k: np.array(v, dtype=float) if k != "energy" else float(v) for k, v in self.base.results.items()}
        n = len(a)
        m = self.mode
        if m == "nan_energy": r["energy"] = float("nan")
        elif m == "inf_energy": r["energy"] = float("inf")
        elif m == "str_energy": r["energy"] = "1.5"
        elif m == "peratom_energy": r["energy"] = np.full(n, r["energy"] / n)
        elif m == "none_energy": r["energy"] = None
        elif m == "no_energy": del r["energy"]
        elif m == "complex_energy": r["energy"] = complex(r["energy"], 1.0)
        elif m == "list_energy": r["energy"] = [r["energy"], 0.0]
        elif m == "nan_forces": r["forces"] = r["forces"] * float("nan")
        elif m == "inf_forces": r["forces"][0, 0] = float("inf")
        elif m == "flat_forces": r["forces"] = r["forces"].reshape(-1)
        elif m == "n2_forces": r["forces"] = r["forces"][:, :2]
        elif m == "short_forces": r["forces"] = r["forces"][:-1]
        elif m == "long_forces": r["forces"] = np.vstack([r["forces"], np.zeros((1, 3))])
        elif m == "str_forces": r["forces"] = "forces"
        elif m == "no_forces": del r["forces"]
        elif m == "none_forces": r["forces"] = None
        elif m == "transposed_forces": r["forces"] = r["forces"].T
        elif m == "obj_forces": r["forces"] = np.array([object()] * (3 * n), dtype=object).reshape(n, 3)
        elif m == "big_shape_forces": r["forces"] = (r["forces"] if n < 5 else r["forces"][:, :2])
        elif m == "nan_stress" and "stress" in r: r["stress"] = r["stress"] * float("nan")
        elif m == "short_stress" and "stress" in r: r["stress"] = r["stress"][:5]
        elif m == "str_stress" and "stress" in r: r["stress"] = "stress"
        elif m == "random": r["energy"] += float(np.random.normal(0, 0.05)); r["forces"] += np.random.normal(0, 0.05, (n, 3))
        elif m == "random_forces": r["forces"] += np.random.normal(0, 0.05, (n, 3))
        elif m == "drift": Corrupt.calls = getattr(Corrupt, "calls", 0) + 1; r["energy"] += 1e-3 * Corrupt.calls
        elif m == "hang": time.sleep(3600)
        elif m == "hang_big" and n >= 5: time.sleep(3600)
        elif m == "raise": raise RuntimeError("model exploded")
        elif m == "keyerror_H" and "H" in a.get_chemical_symbols(): raise KeyError("element H not supported")
        elif m == "nan_H" and "H" in a.get_chemical_symbols(): r["energy"] = float("nan")
        elif m == "exit_big" and n >= 6: os._exit(3)
        elif m == "slow" and n > 2: time.sleep(1.0)
        elif m == "int_energy": r["energy"] = int(round(r["energy"] * 1000))
        elif m == "bool_energy": r["energy"] = True
        elif m == "int_forces": r["forces"] = np.zeros((n, 3), dtype=int)
        elif m == "f32": r["forces"] = r["forces"].astype(np.float32)
        elif m == "exit0": raise SystemExit(0)
        elif m == "sysexit_big" and n >= 5: import sys; sys.exit(2)
        elif m == "results_nan": self.clean_energy = r["energy"]; r["energy"] = float("nan")
        elif m == "noise_1e3": r["forces"] += np.random.normal(0, 1e-3, (n, 3))
        self.results = r
    def get_property(self, name, atoms=None, allow_calculation=True):
        v = super().get_property(name, atoms, allow_calculation)
        if self.mode == "getter_nan" and name == "energy": return float("nan")
        if self.mode == "getter_forces_nan" and name == "forces": return v * float("nan")
        if self.mode == "results_nan" and name == "energy": return self.clean_energy
        return v

def make(mode):
    def factory():
        c = Corrupt(); c.mode = mode; return c
    return factory

for _m in ["clean", "nan_energy", "inf_energy", "str_energy", "peratom_energy", "none_energy", "no_energy",
           "complex_energy", "list_energy", "nan_forces", "inf_forces", "flat_forces", "n2_forces",
           "short_forces", "long_forces", "str_forces", "no_forces", "none_forces", "transposed_forces",
           "obj_forces", "big_shape_forces", "nan_stress", "short_stress", "str_stress", "random",
           "random_forces", "drift", "hang", "hang_big", "raise", "keyerror_H", "nan_H", "exit_big", "slow",
           "int_energy", "bool_energy", "int_forces", "f32", "exit0", "sysexit_big", "results_nan", "noise_1e3",
           "getter_nan", "getter_forces_nan"]:
    globals()[_m] = make(_m)

def factory_raises():
    raise RuntimeError("cannot find my weights")
def factory_exits():
    import sys; sys.exit(1)
def factory_none():
    return None
def factory_int():
    return 42
def factory_needs_arg(path):
    return EMT()
factory_class = EMT
not_callable = 3
'''

SMALL = '''
[[contract]]
name = "rotation-small"
check = "symmetry"
transform = "rotation"
samples = 1
structures = [ { kind = "molecule", name = "CH4" }, { kind = "bulk", name = "Cu", cubic = true, rattle = 0.05 } ]
tolerance = { energy = 1e-4, forces = 1e-3, stress = 1e-4 }

[[contract]]
name = "translation-small"
check = "symmetry"
transform = "translation"
samples = 1
structures = [ { kind = "molecule", name = "NH3" }, { kind = "cluster", symbols = "Cu3Ni3", seed = 2 } ]
tolerance = { energy = 1e-4, forces = 1e-3 }

[[contract]]
name = "ef-small"
check = "energy_force"
components = 3
structures = [ { kind = "molecule", name = "H2O" } ]
tolerance = { forces = 0.05 }
'''

CONTRACT = '''
[[contract]]
name = "{name}"
check = "symmetry"
transform = "rotation"
samples = 1
hard = {hard}
structures = [ {structure} ]
tolerance = {{ energy = {etol}, forces = 1e-3 }}
'''


BASELINE = '{"format": "pytest-mlip-baseline", "version": 1, "target": "bad_models:clean", "run": "r", ' \
           '"code_version": "c", "entries": []}\n'


@dataclass
class Case:
    group: str
    name: str
    args: list[str]
    expect: str  # usage | fail | incomplete | safe
    pattern: str = ""  # regex the output (or the files named in `look`) must match
    files: dict[str, str | bytes] = field(default_factory=dict)
    protect: list[str] = field(default_factory=list)  # user files that must be unchanged afterwards
    env: dict[str, str] = field(default_factory=dict)
    look: list[str] = field(default_factory=list)  # files whose text joins the output for `pattern`
    signal_after: float | None = None  # send SIGINT (or `sig`) after this many seconds
    sig: int = signal.SIGINT
    stores: list[str] = field(default_factory=list)  # sqlite files that must pass integrity_check
    timeout: float = 240.0


def new_cases(F) -> list[Case]:
    """Cases added with issue 10's last round (names start with n_): exits inside calls, getters that disagree with
    results, determinism with any selection, case-exact symbols in every field, mlip_paths outside the project,
    near-miss names, the energy-force floor, option values."""
    out = []
    for mode, pat in {"exit0": "SystemExit", "sysexit_big": "SystemExit", "getter_nan": "get_potential_energy",
                      "getter_forces_nan": "get_forces", "results_nan": "results\\['energy'\\]"}.items():
        out.append(Case("garbage", f"n_{mode}", small(mode), "fail", pat, files=dict(F)))
    out.append(Case("garbage", "n_random_no_builtin", small("random"), "fail", "determinism\\[", files=dict(F)))
    out.append(Case("garbage", "n_noise_small_no_builtin", small("noise_1e3", ["-k", "ef-small", "--mlip-partial"]),
                    "fail", "determinism\\[", files=dict(F)))
    out.append(Case("garbage", "n_noise_builtin_k", ["--mlip=bad_models:noise_1e3", "--mlip-committee=none",
                                                     "-k", "zero-net-force", "--mlip-partial"],
                    "fail", "determinism\\[", files={}))
    out.append(Case("garbage", "n_noise_xdist", small("noise_1e3", ["-n", "2"]), "fail", "determinism\\[",
                    files=dict(F)))
    out.append(Case("garbage", "n_control_clean_sampled", small("clean"), "safe", "identical within the floor",
                    files=dict(F)))
    out.append(Case("spec", "n_factory_exits", ["--mlip=bad_models:factory_exits", "--mlip-committee=none",
                                                "--mlip-no-builtin"], "usage", "factory.*SystemExit", files=dict(F)))
    out.append(Case("spec", "n_module_exits_on_import", ["--mlip=exit_mod:f", "--mlip-committee=none",
                                                         "--mlip-no-builtin"], "usage", "cannot import.*SystemExit",
                    files={**F, "exit_mod.py": "import sys\nsys.exit(0)\ndef f():\n    pass\n"}))
    lower = {
        "n_lower_compression_element": ('[[contract]]\nname="cw"\ncheck="compression_wall"\ncrystals=[{element="cu",'
                                        'structure="fcc"}]\n', "'cu' -> 'Cu'"),
        "n_upper_surface_element": ('[[contract]]\nname="rw"\ncheck="repulsive_wall"\nsurfaces=[{element="CU",'
                                    'facet="fcc111",adatom="O"}]\n', "'CU' -> 'Cu'"),
        "n_lower_surface_adatom": ('[[contract]]\nname="rw"\ncheck="repulsive_wall"\nsurfaces=[{element="Cu",'
                                   'facet="fcc111",adatom="o"}]\n', "'o' -> 'O'"),
        "n_lower_pes_surface": ('[[contract]]\nname="ps"\ncheck="pes_smoothness"\nsurfaces=[{element="cu",'
                                'facet="fcc111",adatom="O"}]\n', "'cu' -> 'Cu'"),
        "n_lower_dimer_pair": ('[[contract]]\nname="rw"\ncheck="repulsive_wall"\npairs=[["h","H"]]\n', "'h'"),
        "n_lower_atom": (contract(structure='{ kind = "atom", element = "cu" }'), "cu"),
        "n_lower_slab": (contract(structure='{ kind = "slab", element = "cu", facet = "fcc111" }'), "cu"),
        "n_lower_bulk": (contract(structure='{ kind = "bulk", name = "cu", cubic = true }'), "cu"),
        "n_lower_cluster": (contract(structure='{ kind = "cluster", symbols = "cu3ni3" }'), "cu3ni3|symbol"),
        "n_ef_tolerance_tiny": ('[[contract]]\nname="e"\ncheck="energy_force"\nstructures=[{kind="molecule",'
                                'name="H2O"}]\ntolerance={forces=1e-9}\n', "floor"),
    }
    for name, (text, pat) in lower.items():
        out.append(Case("contract", name, small(), "usage", pat, files={"contracts/mlip_bad.toml": text}))
    out.append(Case("contract", "n_mlip_paths_parent", small(), "usage", "mlip_paths.*outside the project",
                    files={**F, "pytest.ini": "[pytest]\nmlip_paths = ..\n"}))
    out.append(Case("contract", "n_mlip_paths_absolute", small(), "usage", "mlip_paths.*outside the project",
                    files={**F, "pytest.ini": "[pytest]\nmlip_paths = /tmp\n"}))
    for name, fname in {"n_near_toml_txt": "contracts/mlip_gap.toml.txt", "n_near_upper": "contracts/MLIP_gap.toml",
                        "n_near_backup": "generated_tests/mlip_gap.toml~",
                        "n_near_in_mlip_paths": "physics/mlip-gap.toml",
                        "n_near_tml": "contracts/mlip_gap.tml"}.items():
        files = {**F, fname: contract("gap")}
        if "physics" in fname:
            files["pytest.ini"] = "[pytest]\nmlip_paths = physics\n"
        out.append(Case("contract", name, small(), "safe", re.escape(Path(fname).name) + " looks like a contract "
                        "file", files=files))
    for name, extra, pat in [("n_adversary_budget_negative", ["--mlip-adversary", "--mlip-adversary-budget=-5"],
                              "budget"),
                             ("n_adversary_method_bad", ["--mlip-adversary", "--mlip-adversary-method=magic"],
                              "method"),
                             ("n_reference_budget_nan", ["--mlip-reference-budget=nan"], "budget"),
                             ("n_margin_inf", ["--mlip-regression-margin=inf"], "margin"),
                             ("n_timeout_inf", ["--mlip-timeout=inf"], "timeout"),
                             ("n_adversary_seed_negative", ["--mlip-adversary", "--mlip-adversary-seed=-1"], "seed"),
                             ("n_margin_inf_ini", [], "margin"),
                             ("n_partial_ini_bad", [], "mlip_partial")]:
        files = dict(F)
        if name == "n_partial_ini_bad":
            files["pytest.ini"] = "[pytest]\nmlip_partial = maybe\n"
        if name == "n_margin_inf_ini":
            files["pytest.ini"] = "[pytest]\nmlip_regression_margin = inf\n"
        out.append(Case("options", name, small("clean", extra), "usage", pat, files=files))
    for name, env in {"n_reference_threads_abc": {"PYTEST_MLIP_REFERENCE_THREADS": "abc"},
                      "n_gpaw_ranks_zero": {"PYTEST_MLIP_GPAW_RANKS": "0"},
                      "n_offline_maybe": {"PYTEST_MLIP_OFFLINE": "maybe"}}.items():
        out.append(Case("options", name, small("clean"), "usage", next(iter(env)), files=dict(F), env=env))
    return out


def r6_cases(F) -> list[Case]:
    """Cases from held-out round 6 (names start with r6_), added after that round: they are development cases now."""
    out = []
    soft = contract("gen").replace("hard = true", "hard = false")
    out.append(Case("contract", "r6_generated_soft", small(), "usage", "hard = false.*is a hard law",
                    files={"generated_tests/mlip_gen.toml": soft}, protect=["generated_tests/mlip_gen.toml"]))
    out.append(Case("options", "r6_keep_into_a_file", small("clean", ["--mlip-adversary", "--mlip-adversary-keep"]),
                    "usage", "generated_tests.*not a folder", files={**F, "generated_tests": "my notes\n"},
                    protect=["generated_tests"]))
    for key in ("mlip_update_baseline", "mlip_list", "mlip_contracts"):
        out.append(Case("options", f"r6_ini_{key}", small("clean", ["--mlip-baseline=b.json"]), "usage",
                        f"{key} = true", files={**F, "pytest.ini": f"[pytest]\n{key} = true\n"}))
    out.append(Case("spec", "r6_factory_missing_package", ["--mlip=needs_pkg:f", "--mlip-committee=none",
                                                           "--mlip-no-builtin"], "usage",
                    "imports 'no_such_pkg_r6'.*install the package",
                    files={**F, "needs_pkg.py": "import no_such_pkg_r6\n\ndef f():\n    pass\n"}))
    out.append(Case("options", "r6_store_is_a_text_file", small("clean", ["--mlip-store=notes.txt"]), "usage",
                    "notes.txt.*not a usable", files={**F, "notes.txt": "my notes\n" * 100}, protect=["notes.txt"]))
    return out


def r9_cases(F) -> list[Case]:
    """Cases from held-out rounds 9 to 13 (names start with r9_ ... r13_), added after them: development cases
    now."""
    out = [Case("contract", "r9_near_miss_named_as_argument", small("clean", ["mlip-c.toml"]), "usage",
                "not a contract file pytest --mlip collects.*rename it to mlip_c.toml",
                files={**F, "mlip-c.toml": contract("c9")}, protect=["mlip-c.toml"]),
           Case("options", "r9_bad_json_baseline_names_a_fix_that_works", small("clean", ["--mlip-baseline=bad.json"]),
                "usage", "not valid JSON.*move it aside", files={**F, "bad.json": "{not json"}, protect=["bad.json"]),
           Case("options", "r9_update_baseline_in_pytest_addopts", small("clean"), "usage",
                "--mlip-update-baseline in the PYTEST_ADDOPTS", files=dict(F), protect=[],
                env={"PYTEST_ADDOPTS": "--mlip-baseline=ub.json --mlip-update-baseline"}),
           Case("contract", "r9_generated_protocol_reads_outside", small("clean"), "usage",
                "agent validator refuses it", files={**F, "notes.py": "x = 1\n", "generated_tests/mlip_g9.toml":
                                                     contract("g9", structure='{ kind = "file", path = "../notes.py" }')},
                protect=["notes.py"]),
           # round 10
           Case("files", "r10_junitxml_over_a_contract_file", small("clean", ["--junitxml=contracts/mlip_small.toml"]),
                "usage", "not a JUnit XML report", files=dict(F), protect=["contracts/mlip_small.toml"]),
           Case("garbage", "r10_thread_os_exit_before_the_summary", ["--mlip=quits:f", "--mlip-committee=none",
                                                                     "--mlip-no-builtin"], "incomplete",
                "os._exit\\(0\\) was called before the run finished", files={**F, "quits.py": (
                    "import os, threading\nfrom ase.calculators.emt import EMT\n\n\nclass Q(EMT):\n"
                    "    def calculate(self, *a, **k):\n        threading.Timer(0.05, lambda: os._exit(0)).start()\n"
                    "        super().calculate(*a, **k)\n\n\ndef f():\n    return Q()\n")})]
    # round 11
    net = {"contracts/mlip_net.toml": '[[contract]]\nname = "net11"\ncheck = "zero_net_force"\n'
                                      'structures = [ { kind = "molecule", name = "H2O" } ]\n'}
    pushed = ("import atexit, os\nimport numpy as np\nfrom ase.calculators.emt import EMT\n\n"
              "atexit.register(lambda: os._exit(0) if os.environ.get('R11_ATEXIT') else None)\n\n\n"
              "class P(EMT):\n    def calculate(self, atoms=None, *a, **k):\n"
              "        if os.environ.get('R11_REWRITE') and atoms is not None:\n"
              "            atoms.numbers = np.ones(len(atoms), dtype=int)\n"
              "        super().calculate(atoms, *a, **k)\n"
              "        if not os.environ.get('R11_REWRITE'):\n"
              "            self.results['forces'] = self.results['forces'] + 0.1\n\n\ndef f():\n    return P()\n")
    atomic = ("import numpy as np\nfrom ase.calculators.calculator import Calculator, all_changes\n\n\n"
              "class A(Calculator):\n    implemented_properties = ['energy', 'forces']\n\n"
              "    def calculate(self, atoms=None, properties=('energy',), system_changes=all_changes):\n"
              "        super().calculate(atoms, properties, system_changes)\n"
              "        e = {1: -13.6, 6: -5.0, 7: -3.1, 8: -4.4}\n"
              "        self.results = {'energy': float(sum(e.get(int(z), -1.0) for z in self.atoms.numbers)),\n"
              "                        'forces': np.zeros((len(self.atoms), 3))}\n\n\n"
              "def f():\n    c = A()\n    c.mlip_metadata = {'elements': ('H', 'C', 'N', 'O')}\n    return c\n")
    run = ["--mlip=pushed:f", "--mlip-committee=none", "--mlip-no-builtin"]
    xfail = ("import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n"
             "        item.add_marker(pytest.mark.xfail(reason='known'))\n")
    out += [Case("gate", "r11_xfail_mark_on_a_hard_failure", run + ["contracts/mlip_net.toml"], "fail",
                 "pytest counted no failure", files={**net, "pushed.py": pushed, "conftest.py": xfail}),
            Case("garbage", "r11_atexit_os_exit_after_a_failed_run", run + ["contracts/mlip_net.toml"], "fail",
                 "net11", files={**net, "pushed.py": pushed}, env={"R11_ATEXIT": "1"}),
            Case("garbage", "r11_model_rewrites_its_input", run + ["contracts/mlip_net.toml"], "incomplete",
                 "changed the structure it was given", files={**net, "pushed.py": pushed}, env={"R11_REWRITE": "1"}),
            Case("garbage", "r11_per_element_constants_no_interaction",
                 ["--mlip=atomic:f", "--mlip-committee=none", "--mlip-no-builtin", "contracts/mlip_two.toml"],
                 "incomplete", "no interaction", files={"atomic.py": atomic, "contracts/mlip_two.toml": (
                     '[[contract]]\nname = "two11"\ncheck = "zero_net_force"\nstructures = [ { kind = "molecule", '
                     'name = "NH3" }, { kind = "molecule", name = "H2O" }, { kind = "molecule", name = "CH4" } ]\n')}),
            Case("options", "r11_part_of_pytest_mlip_switched_off",
                 small("random", ["-p", "no:pytest_mlip.reporting.plugin"]), "usage", "switches off a part",
                 files=dict(F))]
    # round 13 (helper-52): a constant energy with real forces, results not recomputed, a hook that lowers the status
    emt_with = ("from ase.calculators.emt import EMT\n\n\nclass M(EMT):\n    first = {{}}\n\n"
                "    def calculate(self, *a, **k):\n        super().calculate(*a, **k)\n        {body}\n\n\n"
                "def f():\n    return M()\n")
    wall = {"contracts/mlip_wall.toml": '[[contract]]\nname = "wall13"\ncheck = "repulsive_wall"\n'
                                        'pairs = [["Cu", "Cu"], ["Ni", "Ni"]]\n'}
    out += [Case("garbage", "r13_constant_energy_with_real_forces",
                 ["--mlip=blind:f", "--mlip-committee=none", "--mlip-no-builtin", "contracts/mlip_wall.toml"],
                 "incomplete", "the energy ignores the structure",
                 files={**wall, "blind.py": emt_with.format(body="self.results['energy'] = -1.0")}),
            Case("garbage", "r13_results_not_recomputed",
                 ["--mlip=stale:f", "--mlip-committee=none", "--mlip-no-builtin", "contracts/mlip_wall.toml"],
                 "incomplete", "results were not recomputed",
                 files={**wall, "stale.py": emt_with.format(
                     body="self.results = dict(M.first.setdefault(len(self.atoms), dict(self.results)))")}),
            Case("gate", "r13_hook_sets_exit_status_zero", small("nan_energy"), "fail", "set the exit status to 0",
                 files={**F, "conftest.py": "def pytest_sessionfinish(session, exitstatus):\n"
                                            "    session.exitstatus = 0\n"})]
    out += r15_cases(F, emt_with)
    return out


def r15_cases(F, emt_with: str) -> list[Case]:
    """Cases from held-out rounds 14 to 16 (names start with r15_), added after them: functions and process state a
    model call changes, pytest's flags that run no test in addopts, an empty store file, a lie to the element probe,
    a user's hook that raises, a cluster that cannot be placed."""
    ao = "[tool.pytest.ini_options]\naddopts = \"{}\"\n"
    net = {"contracts/mlip_net.toml": '[[contract]]\nname = "net15"\ncheck = "zero_net_force"\n'
                                      'structures = [ { kind = "molecule", name = "H2O" } ]\n'}
    liar = ("import numpy as np\nfrom ase.calculators.emt import EMT\n\n\nclass M(EMT):\n"
            "    def calculate(self, atoms=None, *a, **k):\n"
            "        if len(atoms) == 2 and 'H' in atoms.get_chemical_symbols():\n"
            "            raise ValueError('element H not supported')\n"
            "        super().calculate(atoms, *a, **k)\n"
            "        self.results['forces'] = self.results['forces'] + np.array([1.0, 0, 0])\n\n\n"
            "def f():\n    return M()\n")
    model = ["--mlip-committee=none", "--mlip-no-builtin"]
    out = [Case("garbage", f"r15_{tag}", [f"--mlip=m_{tag}:f", *model], "incomplete", pattern,
                files={**F, f"m_{tag}.py": emt_with.format(body=f"import builtins, json, os, sys; {body}")})
           for tag, body, pattern in (
               ("max_mid_call", "builtins.max = lambda *a, **k: 0.0", "changed builtins.max during a call"),
               ("dumps_mid_call", "json.dumps = lambda *a, **k: '{{}}'", "changed json.dumps during a call"),
               ("recursion_limit", "sys.setrecursionlimit(60)", "changed the recursion limit"),
               ("stdout_closed", "sys.stdout.close()", "sys.stdout \\(closed\\)"),
               ("chdir", "os.chdir('/')", "changed the working directory"))]
    out += [Case("gate", f"r15_addopts_{flag.strip('-')}", small("clean"), "usage", f"{flag} in the addopts",
                 files={**F, "pyproject.toml": ao.format(flag)}) for flag in ("--collect-only", "--fixtures",
                                                                              "--markers", "--looponfail")]
    out += [Case("gate", "r15_env_addopts_co", small("clean"), "usage", "PYTEST_ADDOPTS environment variable",
                 files=dict(F), env={"PYTEST_ADDOPTS": "--co"}),
            Case("files", "r15_empty_store_file", small("clean", ["--mlip-store=empty.db"]), "usage",
                 "empty file that pytest-mlip did not write", files={**F, "empty.db": ""}, protect=["empty.db"]),
            Case("garbage", "r15_lie_to_the_element_probe", ["--mlip=liar:f", *model, "contracts/mlip_net.toml"],
                 "fail", "net15 FAIL", files={**net, "liar.py": liar}),
            Case("gate", "r15_summary_hook_raises", small("clean"), "fail", "pytest_terminal_summary hook",
                 files={**F, "conftest.py": "def pytest_terminal_summary(terminalreporter):\n"
                                            "    raise RuntimeError('boom')\n"}),
            Case("contract", "r15_cluster_cannot_be_placed", small("clean", ["contracts/mlip_cl.toml"]), "usage",
                 "cannot place 1000 atoms", files={"contracts/mlip_cl.toml": '[[contract]]\nname = "cl"\n'
                                                   'check = "zero_net_force"\nstructures = [ { kind = "cluster", '
                                                   'symbols = "Cu1000" } ]\n'})]
    out += r19_cases(emt_with)
    return out


def r19_cases(emt_with: str) -> list[Case]:
    """Cases from held-out round 19 (names start with r19_), added after it: an energy blind to the structure on a
    suite of two zero-net-force structures (too few calls for the blind-energy test alone), and the clean control
    (an element-blind Lennard-Jones, whose probe dimers share one energy)."""
    net = {"contracts/mlip_net.toml": '[[contract]]\nname = "net19"\ncheck = "zero_net_force"\n'
                                      'structures = [ { kind = "cluster", symbols = "Cu3Ni3", seed = 2 },\n'
                                      '  { kind = "bulk", name = "Cu", cubic = true, rattle = 0.05 } ]\n'}
    model = ["--mlip-committee=none", "--mlip-no-builtin", "contracts/mlip_net.toml"]
    lj = "from ase.calculators.lj import LennardJones\n\n\ndef f():\n    return LennardJones()\n"
    return [Case("garbage", "r19_energy_per_atom_count", ["--mlip=pern:f", *model], "incomplete",
                 "the energy ignores the geometry", files={**net, "pern.py": emt_with.format(
                     body="self.results['energy'] = -3.0 * len(self.atoms) + 0.1")}),
            Case("garbage", "r19_constant_energy_zero_forces", ["--mlip=flat:f", *model], "incomplete",
                 "the energy ignores the (structure|geometry)", files={**net, "flat.py": emt_with.format(
                     body="self.results['energy'] = -10.0; self.results['forces'] = 0 * self.results['forces']")}),
            Case("garbage", "r19_clean_lennard_jones", ["--mlip=ljf:f", *model], "safe", "net19",
                 files={**net, "ljf.py": lj})]


#: a checkout to import pytest_mlip from (--code); empty: the installed one
CODE: list[str] = []


def small(mode="clean", extra=(), **kw) -> list[str]:
    return [f"--mlip=bad_models:{mode}", "--mlip-committee=none", "--mlip-no-builtin", *extra]


def contract(name="c1", hard="true", structure='{ kind = "molecule", name = "CH4" }', etol="1e-4"):
    return CONTRACT.format(name=name, hard=hard, structure=structure, etol=etol)


def cases() -> list[Case]:
    out: list[Case] = []
    F = {"contracts/mlip_small.toml": SMALL}
    # --- A: garbage model output --------------------------------------------------------------------------
    garbage = {
        "nan_energy": "energy", "inf_energy": "energy", "str_energy": "energy", "peratom_energy": "energy",
        "none_energy": "energy", "no_energy": "energy", "complex_energy": "energy", "list_energy": "energy",
        "nan_forces": "forces", "inf_forces": "forces", "flat_forces": "forces", "n2_forces": "forces",
        "short_forces": "forces", "long_forces": "forces", "str_forces": "forces", "no_forces": "forces",
        "none_forces": "forces", "transposed_forces": "forces", "obj_forces": "forces",
        "big_shape_forces": "forces", "nan_stress": "stress", "short_stress": "stress", "str_stress": "stress",
        "raise": "exploded", "bool_energy": "energy", "random": "determinis", "random_forces": "determinis",
        "drift": "determinis",
    }
    for mode, word in garbage.items():
        args = small(mode) if word != "determinis" else [f"--mlip=bad_models:{mode}", "--mlip-committee=none",
                                                         "-k", "determinism or rotation-invariance"]
        out.append(Case("garbage", mode, args, "fail", word, files=dict(F)))
    out.append(Case("garbage", "nan_H_only", small("nan_H"), "fail", "energy", files=dict(F)))
    out.append(Case("garbage", "hang_with_timeout", small("hang", ["--mlip-timeout=2"]), "fail", "timeout|timed out",
                    files=dict(F), timeout=120))
    out.append(Case("garbage", "hang_big_with_timeout", small("hang_big", ["--mlip-timeout=2"]), "fail",
                    "timeout|timed out", files=dict(F), timeout=120))
    out.append(Case("garbage", "hang_ini_timeout", small("hang"), "fail", "timeout|timed out",
                    files={**F, "pytest.ini": "[pytest]\nmlip_timeout = 2\n"}, timeout=120))
    # controls that must stay clean (a false alarm is a wrong result)
    for mode in ("clean", "int_energy", "f32", "int_forces"):
        exp = "safe" if mode in ("clean", "f32") else "fail"
        out.append(Case("garbage", f"control_{mode}", small(mode), exp, "" if exp == "safe" else "energy|forces",
                        files=dict(F)))
    out.append(Case("garbage", "keyerror_H_is_unsupported", small("keyerror_H"), "safe", "not supported",
                    files=dict(F)))
    # --- B: model spec and factory mistakes ----------------------------------------------------------------
    spec = {
        "factory_raises": ("--mlip=bad_models:factory_raises", "factory.*raised|cannot find my weights"),
        "factory_none": ("--mlip=bad_models:factory_none", "not an ASE calculator"),
        "factory_int": ("--mlip=bad_models:factory_int", "not an ASE calculator"),
        "factory_needs_arg": ("--mlip=bad_models:factory_needs_arg", "factory"),
        "factory_class": ("--mlip=bad_models:factory_class", "."),
        "not_callable": ("--mlip=bad_models:not_callable", "not callable"),
        "missing_attr": ("--mlip=bad_models:nope", "no attribute"),
        "missing_module": ("--mlip=no_such_module:f", "cannot import"),
        "unknown_name": ("--mlip=sevenet-0", "unknown model"),
        "empty_spec": ("--mlip= ", "model|--mlip"),
        "syntax_error_module": ("--mlip=broken_mod:f", "cannot import|SyntaxError|syntax"),
        "bad_weights_path": ("--mlip=mace-mpa-0=/nonexistent/x.model", "not usable|does not exist|not found"),
        "committee_unknown": ("--mlip-committee=nosuchmodel", "unknown model"),
        "committee_empty_items": ("--mlip-committee=,", "committee|unknown"),
    }
    for name, (arg, pat) in spec.items():
        args = [arg, "--mlip-committee=none", "--mlip-no-builtin"] if "committee" not in name else \
            ["--mlip=bad_models:clean", arg, "--mlip-no-builtin"]
        if name == "factory_class":
            out.append(Case("spec", name, args, "safe", "", files=dict(F)))  # a Calculator class called is fine
            continue
        out.append(Case("spec", name, args, "usage", pat, files={**F, "broken_mod.py": "def f(:\n"}))
    # --- C: contract files -----------------------------------------------------------------------------------
    bad = {
        "hard_yes": (contract(hard='"yes"'), "hard"),
        "hard_int": (contract(hard="1"), "hard"),
        "unknown_element": (contract(structure='{ kind = "atom", element = "Xx" }'), "Xx|element"),
        "unknown_element_cluster": (contract(structure='{ kind = "cluster", symbols = "Qq3" }'), "Qq|element|symbol"),
        "unknown_element_bulk": (contract(structure='{ kind = "bulk", name = "Zz" }'), "Zz|element|bulk"),
        "unknown_element_slab": (contract(structure='{ kind = "slab", element = "Yy", facet = "fcc111" }'),
                                 "Yy|element"),
        "unknown_molecule": (contract(structure='{ kind = "molecule", name = "H2O2x" }'), "molecule"),
        "negative_lattice": (contract(structure='{ kind = "bulk", name = "Cu", a = -3.6 }'), "a|lattice|> ?0"),
        "zero_lattice": (contract(structure='{ kind = "bulk", name = "Cu", a = 0.0 }'), "lattice|> ?0"),
        "lattice_in_nm": (contract(structure='{ kind = "bulk", name = "Cu", a = 0.361 }'), "lattice|Å|A\\b"),
        "huge_repeat": (contract(structure='{ kind = "bulk", name = "Cu", cubic = true, repeat = [30, 30, 60] }'),
                        "atoms|repeat"),
        "negative_repeat": (contract(structure='{ kind = "bulk", name = "Cu", repeat = [-1, 1, 1] }'), "repeat"),
        "zero_repeat": (contract(structure='{ kind = "bulk", name = "Cu", repeat = [0, 1, 1] }'), "repeat"),
        "huge_slab": (contract(structure='{ kind = "slab", element = "Cu", facet = "fcc111", size = [60, 60, 60] }'),
                      "atoms|size"),
        "zero_slab": (contract(structure='{ kind = "slab", element = "Cu", facet = "fcc111", size = [0, 2, 3] }'),
                      "size"),
        "negative_vacuum": (contract(structure='{ kind = "slab", element = "Cu", facet = "fcc111", vacuum = -5 }'),
                            "vacuum"),
        "huge_cluster": (contract(structure='{ kind = "cluster", symbols = "Cu5000" }'), "atom"),
        "tolerance_tiny": (contract(etol="1e-12"), "floor|noise"),
        "tolerance_negative": (contract(etol="-1e-4"), "tolerance"),
        "tolerance_nan": (contract(etol="nan"), "tolerance"),
        "tolerance_inf": (contract(etol="inf"), "tolerance"),
        "missing_file": (contract(structure='{ kind = "file", path = "nothere.xyz" }'), "nothere|does not exist"),
        "file_escapes": (contract(structure='{ kind = "file", path = "../../../../etc/hostname" }'),
                         "inside|outside|project"),
        "file_absolute": (contract(structure='{ kind = "file", path = "/etc/hostname" }'),
                          "inside|outside|project|absolute"),
        "file_garbage": (contract(structure='{ kind = "file", path = "junk.xyz" }'), "junk"),
        "invalid_toml": ("[[contract]\nname = 1\n", "TOML"),
        "empty_file": ("", "contract"),
        "no_check": ('[[contract]]\nname = "x"\n', "check"),
        "unknown_check": ('[[contract]]\nname = "x"\ncheck = "symetry"\n', "unknown check"),
        "unknown_key": (contract() + 'colour = "red"\n', "colour|extra"),
        "name_spaces": (contract(name="my contract"), "name"),
        "dup_in_file": (contract("same") + contract("same"), "duplicate"),
        "rattle_negative": (contract(structure='{ kind = "molecule", name = "CH4", rattle = -0.1 }'), "rattle"),
        "rattle_huge": (contract(structure='{ kind = "molecule", name = "CH4", rattle = 5 }'), "rattle"),
        "dimer_too_close": ('[[contract]]\nname="d"\ncheck="symmetry"\ntransform="rotation"\nstructures=[{kind="dimer", '
                            'elements=["Cu","Cu"], distance=0.01}]\n', "distance"),
        "fd_step_tiny": ('[[contract]]\nname="e"\ncheck="energy_force"\nstep=1e-9\nstructures=[{kind="molecule", '
                         'name="H2O"}]\n', "step"),
        "jacobian_step_tiny": ('[[contract]]\nname="j"\ncheck="jacobian_symmetry"\nstep=1e-7\nstructures=[{kind='
                               '"molecule", name="H2O"}]\n', "step"),
        "samples_string": (contract().replace("samples = 1", 'samples = "2"'), "samples"),
        "samples_float": (contract().replace("samples = 1", "samples = 1.5"), "samples"),
        "dissociation_gap_nm": ('[[contract]]\nname="g"\ncheck="dissociation"\ngap=1.2\npairs=[[{kind="molecule",'
                                'name="H2O"},{kind="molecule",name="NH3"}]]\n', "gap|Å|A\\b"),
        "non_utf8": (b'[[contract]]\nname = "caf\xe9"\ncheck = "symmetry"\n', "UTF-8|utf-8|encoding"),
        "top_level_key": ('title = "x"\n' + contract(), "top-level"),
        "contract_not_table": ('contract = 3\n', "contract"),
        "cluster_radius_negative": (contract(structure='{ kind = "cluster", symbols = "Cu3", radius = -1 }'),
                                    "radius"),
        "bulk_strain_huge": (contract(structure='{ kind = "bulk", name = "Cu", strain = [5, 0, 0, 0, 0, 0] }'),
                             "strain"),
        "tolerance_999": (contract(etol="999"), "100x the built-in default"),
        "periodic_image_molecule": (contract().replace('"rotation"', '"periodic_image"'),
                                    "none of its structures is periodic"),
        "empty_table": ("[[contract]]\n", "has no check"),
        "bulk_lower_case": (contract(structure='{ kind = "bulk", name = "cu", crystalstructure = "fcc", a = 3.6 }'),
                            "write 'Cu'"),
    }
    for name, (text, pat) in bad.items():
        files = {"contracts/mlip_bad.toml": text, "junk.xyz": "this is not xyz\n"}
        out.append(Case("contract", name, small(), "usage", pat, files=files))
    dup = {"contracts/mlip_a.toml": contract("same"), "contracts/mlip_b.toml": contract("same")}
    out.append(Case("contract", "dup_across_files", small(), "usage", "mlip_a.*mlip_b|mlip_b.*mlip_a", files=dup))
    out.append(Case("contract", "dup_across_builtin", ["--mlip=bad_models:clean", "--mlip-committee=none",
                                                       "-k", "rotation"], "usage",
                    "duplicate|the name of a built-in contract",
                    files={"contracts/mlip_mine.toml": contract("rotation-invariance")}))
    out.append(Case("contract", "near_miss_dash", small(), "safe", "mlip-gap.toml looks like a contract file",
                    files={"contracts/mlip-gap.toml": contract("gap"), "contracts/mlip_ok.toml": contract("ok")}))
    out.append(Case("contract", "near_miss_suffix", small(), "safe", "mlip_gap.TOML looks like a contract file",
                    files={"contracts/mlip_gap.TOML": contract("gap"), "contracts/mlip_ok.toml": contract("ok")}))
    out.append(Case("contract", "near_miss_generated", small(), "safe", "mlipgap.toml looks like a contract file",
                    files={"generated_tests/mlipgap.toml": contract("gap"), "contracts/mlip_ok.toml": contract("ok")}))
    out.append(Case("contract", "ini_paths_misspelt", small(), "usage", "unknown ini key 'mlip_path'.*mlip_paths",
                    files={"pytest.ini": "[pytest]\nmlip_path = more\n", "more/mlip_x.toml": contract("x"),
                           "contracts/mlip_ok.toml": contract("ok")}))
    gen = {
        "gen_file_escape": contract(structure='{ kind = "file", path = "../secret.xyz" }'),
        "gen_tolerance_tiny": contract(etol="1e-9"),
        "gen_absolute_file": contract(structure='{ kind = "file", path = "/etc/hostname" }'),
    }
    for name, text in gen.items():
        out.append(Case("contract", name, small(), "usage", "generated|agent|validator|floor|inside|outside",
                        files={"generated_tests/mlip_gen.toml": text, "secret.xyz": "1\n\nH 0 0 0\n"}))
    # --- D: environment and option values ----------------------------------------------------------------------
    env_cases = {
        "threads_abc": ({"PYTEST_MLIP_THREADS": "abc"}, [], "PYTEST_MLIP_THREADS"),
        "threads_zero": ({"PYTEST_MLIP_THREADS": "0"}, [], "PYTEST_MLIP_THREADS"),
        "threads_negative": ({"PYTEST_MLIP_THREADS": "-2"}, [], "PYTEST_MLIP_THREADS"),
        "threads_float": ({"PYTEST_MLIP_THREADS": "1.5"}, [], "PYTEST_MLIP_THREADS"),
        "margin_negative": ({}, ["--mlip-regression-margin=-1"], "margin"),
        "margin_nan": ({}, ["--mlip-regression-margin=nan"], "margin"),
        "margin_abc": ({}, ["--mlip-regression-margin=abc"], "margin|float"),
        "timeout_abc": ({}, ["--mlip-timeout=abc"], "timeout"),
        "timeout_zero": ({}, ["--mlip-timeout=0"], "timeout"),
        "timeout_negative": ({}, ["--mlip-timeout=-5"], "timeout"),
        "output_is_file": ({}, ["--mlip-output=afile"], "output|file"),
        "summary_in_new_dir": ({}, ["--mlip-summary-md=newdir/sub/s.md"], "summary: "),
        "update_without_baseline": ({}, ["--mlip-update-baseline"], "baseline"),
        "baseline_missing": ({}, ["--mlip-baseline=nobase.json"], "baseline"),
        "ini_timeout_bad": ({}, [], "timeout"),
    }
    for name, (env, extra, pat) in env_cases.items():
        files = {**F, "afile": "x"}
        if name == "ini_timeout_bad":
            files["pytest.ini"] = "[pytest]\nmlip_timeout = soon\n"
        out.append(Case("options", name, small("clean", extra), "safe" if name == "summary_in_new_dir" else "usage",
                        pat, files=files, env=env))
    # --- E: the user's files ----------------------------------------------------------------------------------
    user = {"docs/figures/mine.png": b"\x89PNG user figure", "docs/worst/notes.txt": "user notes\n",
            "docs/index.md": "# my docs\n"}
    out.append(Case("files", "report_into_user_docs", small("clean", ["--mlip-report=docs"]), "usage",
                    "mlip-report|not empty|marker", files={**F, **user}, protect=list(user)))
    out.append(Case("files", "report_into_cwd", small("clean", ["--mlip-report=."]), "usage",
                    "mlip-report|not empty|marker", files={**F, "README.md": "mine\n"}, protect=["README.md"]))
    out.append(Case("files", "report_is_file", small("clean", ["--mlip-report=notes.txt"]), "usage",
                    "mlip-report", files={**F, "notes.txt": "mine\n"}, protect=["notes.txt"]))
    out.append(Case("files", "report_twice_ok", small("clean", ["--mlip-report=rep"]), "safe", "",
                    files={**F}, protect=[]))
    out.append(Case("files", "baseline_package_json", small("clean", ["--mlip-baseline=package.json",
                                                                     "--mlip-update-baseline"]), "usage",
                    "not a pytest-mlip baseline|package.json", files={**F, "package.json": '{"name": "x"}\n'},
                    protect=["package.json"]))
    out.append(Case("files", "baseline_text_file", small("clean", ["--mlip-baseline=README.md",
                                                                  "--mlip-update-baseline"]), "usage",
                    "baseline", files={**F, "README.md": "# hello\n"}, protect=["README.md"]))
    out.append(Case("files", "baseline_empty_file", small("clean", ["--mlip-baseline=empty.json",
                                                                   "--mlip-update-baseline"]), "usage",
                    "baseline", files={**F, "empty.json": ""}, protect=["empty.json"]))
    out.append(Case("files", "baseline_is_dir", small("clean", ["--mlip-baseline=docs", "--mlip-update-baseline"]),
                    "usage", "baseline", files={**F, "docs/a.txt": "x"}, protect=["docs/a.txt"]))
    foreign = _foreign_db()
    out.append(Case("files", "store_foreign_sqlite", small("clean", ["--mlip-store=app.db"]), "usage",
                    "not a pytest-mlip|foreign|move", files={**F, "app.db": foreign}, protect=["app.db"]))
    out.append(Case("files", "store_damaged", small("clean", ["--mlip-store=st.sqlite"]), "usage",
                    "damaged|malformed|move", files={**F, "st.sqlite": _damaged_store()}, protect=["st.sqlite"]))
    out.append(Case("files", "store_text_file", small("clean", ["--mlip-store=notes.txt"]), "usage",
                    "store", files={**F, "notes.txt": "mine\n" * 100}, protect=["notes.txt"]))
    out.append(Case("files", "store_is_dir", small("clean", ["--mlip-store=docs"]), "usage", "store",
                    files={**F, "docs/a.txt": "x"}, protect=["docs/a.txt"]))
    out.append(Case("files", "output_user_folder", small("clean", ["--mlip-output=docs"]), "safe", "",
                    files={**F, **user}, protect=list(user)))
    out.append(Case("files", "output_is_a_file", small("clean", ["--mlip-output=README.md"]), "usage",
                    "is a file, not a folder", files={**F, "README.md": "mine\n"}))
    out.append(Case("files", "summary_onto_readme", small("clean", ["--mlip-summary-md=README.md"]), "usage",
                    "summary|README|pytest-mlip", files={**F, "README.md": "# my project\n"}, protect=["README.md"]))
    base4 = {**F}
    out.append(Case("files", "ctrl_c_during_baseline_update",
                    small("slow", ["--mlip-baseline=base.json", "--mlip-update-baseline"]), "incomplete",
                    "incomplete|interrupt", files=base4, signal_after=7.0, protect=["base.json"]))
    out.append(Case("files", "sigterm_during_baseline_update",
                    small("slow", ["--mlip-baseline=base.json", "--mlip-update-baseline"]), "incomplete",
                    "incomplete|interrupt|SIGTERM|terminat", files=base4, signal_after=7.0, sig=signal.SIGTERM,
                    protect=["base.json"]))
    out.append(Case("files", "store_integrity_after_ctrl_c", small("slow", ["--mlip-store=s.sqlite"]),
                    "incomplete", "incomplete|interrupt", files=dict(F), signal_after=7.0, stores=["s.sqlite"]))
    out += new_cases(F)
    out += r6_cases(F)
    out += r9_cases(F)
    # --- F: incomplete runs ----------------------------------------------------------------------------------
    summ = ["--mlip-summary-md=sum.md", "--mlip-report=rep"]
    look = ["sum.md", "rep/report.md", "rep/report.json"]
    out.append(Case("incomplete", "crash_on_big_systems", small("big_shape_forces", summ), "incomplete",
                    "(?i)incomplete", files=dict(F), look=look))
    out.append(Case("incomplete", "ctrl_c_report", small("slow", summ), "incomplete", "(?i)incomplete",
                    files=dict(F), look=look, signal_after=7.0))
    out.append(Case("incomplete", "sigterm_report", small("slow", summ), "incomplete", "(?i)incomplete",
                    files=dict(F), look=look, signal_after=7.0, sig=signal.SIGTERM))
    out.append(Case("incomplete", "dead_xdist_worker", small("exit_big", summ + ["-n", "2"]), "incomplete",
                    "(?i)incomplete", files=dict(F), look=look))
    out.append(Case("incomplete", "deselected_hard", small("clean", summ + ["-k", "translation"]), "incomplete",
                    "(?i)incomplete", files=dict(F), look=look))
    out.append(Case("incomplete", "n_deselected_partial", small("clean", summ + ["-k", "translation",
                                                                               "--mlip-partial"]), "safe",
                    "PARTIAL run", files=dict(F), look=look))
    out.append(Case("incomplete", "n_deselected_partial_ini", small("clean", summ + ["-k", "translation"]), "safe",
                    "PARTIAL run", files={**F, "pytest.ini": "[pytest]\nmlip_partial = true\n"}, look=look))
    out.append(Case("incomplete", "n_deselect_option", small("clean", summ + [
        "--deselect", "contracts/mlip_small.toml::ef-small[bad_models:clean]"]), "incomplete", "(?i)incomplete",
        files=dict(F), look=look))
    out.append(Case("incomplete", "n_marker_deselects_hard", small("clean", summ + ["-m", "not slow"]), "incomplete",
                    "(?i)incomplete.*slow-one|slow-one.*deselected", files={
                        **F, "contracts/mlip_slow.toml": contract("slow-one") + "slow = true\n"}, look=look))
    out.append(Case("incomplete", "n_determinism_in_reports", small("random", summ), "incomplete",
                    "determinism\\[bad_models:random\\]", files=dict(F), look=look))
    out.append(Case("incomplete", "deselected_hard_gate", small("clean", summ + ["-k", "translation",
                                                                                "--mlip-baseline=base.json"]),
                    "incomplete", "(?i)incomplete", files={**F, "base.json": BASELINE}, look=look))
    out.append(Case("incomplete", "deselected_hard_gate_seeded", small("clean", summ + [
        "-k", "translation", "--mlip-baseline=base.json"]), "incomplete", "(?i)incomplete", files=dict(F), look=look))
    out.append(Case("incomplete", "raise_errors_report", small("raise", summ), "incomplete", "(?i)incomplete",
                    files=dict(F), look=look))
    out.append(Case("incomplete", "timeout_report", small("hang_big", summ + ["--mlip-timeout=2"]), "incomplete",
                    "(?i)incomplete", files=dict(F), look=look, timeout=120))
    out.append(Case("incomplete", "maxfail_stop", small("raise", summ + ["-x"]), "incomplete", "(?i)incomplete",
                    files=dict(F), look=look))
    return out


def _foreign_db() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f.db"
        db = sqlite3.connect(p)
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        db.executemany("INSERT INTO customers (name) VALUES (?)", [(f"c{i}",) for i in range(50)])
        db.commit()
        db.close()
        return p.read_bytes()


def _damaged_store() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.sqlite"
        db = sqlite3.connect(p)
        db.execute("PRAGMA page_size = 1024")
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        db.execute("CREATE TABLE artifacts (id TEXT PRIMARY KEY, kind TEXT NOT NULL, value TEXT NOT NULL, "
                   "routine TEXT NOT NULL, params TEXT NOT NULL, reason TEXT NOT NULL, context TEXT NOT NULL, "
                   "model TEXT, model_version TEXT, weights_hash TEXT, code_version TEXT NOT NULL, run TEXT, "
                   "created REAL NOT NULL, payload BLOB)")
        db.executemany("INSERT INTO artifacts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       [(f"{i:064x}", "k", "1", "r", "{}", "", "{}", None, None, None, "c", None, 0.0, b"x" * 500)
                        for i in range(200)])
        db.commit()
        db.close()
        raw = bytearray(p.read_bytes())
        for off in range(1024 * 20, 1024 * 24):  # scribble over pages in the middle
            raw[off] = 0xAB
        return bytes(raw)


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
#: pytest's traceback frames ("path.py:12: Error"); one alone is pytest's KeyboardInterrupt line, not a traceback
FRAME = re.compile(r"^\S+\.py:\d+: \w+", re.M)


def run_case(case: Case, python: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="mlipbad-") as d:
        root = Path(d)
        (root / "bad_models.py").write_text(MODELS)
        for rel, content in case.files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)
        if case.name.startswith(("ctrl_c_during", "sigterm_during", "deselected_hard_gate_seeded")):
            target = next(a.split("=", 1)[1] for a in case.args if a.startswith("--mlip="))
            _seed_baseline(root, python, target)
        before = {rel: digest(root / rel) for rel in case.protect}
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *CODE])}
        env.pop("PYTEST_ADDOPTS", None)  # the bench's own environment's, not a case's
        env.update(case.env)
        cmd = [python, "-m", "pytest", "-p", "no:cacheprovider", *case.args]
        start = time.time()
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", start_new_session=True,
                                # a background launcher leaves SIGINT ignored, and Python then never raises
                                # KeyboardInterrupt: the case would measure the launcher, not pytest-mlip
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            if case.signal_after is not None:
                try:
                    proc.wait(timeout=case.signal_after)
                except subprocess.TimeoutExpired:
                    proc.send_signal(case.sig)
            text, _ = proc.communicate(timeout=case.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            text, _ = proc.communicate()
            text += "\n[bench: killed after timeout]"
        rc = proc.returncode
        seconds = time.time() - start
        extra = ""
        for rel in case.look:
            if (root / rel).is_file():
                extra += "\n" + (root / rel).read_text(errors="replace")
        lost = [rel for rel in case.protect if digest(root / rel) != before[rel]]
        if case.name.startswith(("ctrl_c_during", "sigterm_during")):
            lost = _baseline_damaged(root / "base.json")
        for rel in case.stores:
            p = root / rel
            if p.exists():
                try:
                    ok = sqlite3.connect(p).execute("PRAGMA integrity_check").fetchone()[0]
                except sqlite3.DatabaseError as exc:
                    ok = str(exc)
                if ok != "ok":
                    lost.append(f"{rel}: {ok}")
        outcome, why = classify(case, rc, text, extra, lost)
        return {"group": case.group, "name": case.name, "outcome": outcome, "why": why, "rc": rc,
                "seconds": round(seconds, 1), "tail": _last_error_line(text)}


def _seed_baseline(root: Path, python: str, target: str):
    """A complete baseline of the small suite for ``target``, written by the code under test (4 entries). It is
    recorded on the fast clean model and renamed to the target (a slow target would take minutes to record): a
    baseline of another target is refused, so the interrupted update must replace the target's own."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *CODE])}
    subprocess.run([python, "-m", "pytest", "-p", "no:cacheprovider", *small("clean", [
        "--mlip-baseline=base.json", "--mlip-update-baseline"])], cwd=root, env=env, capture_output=True)
    path = root / "base.json"
    if path.is_file():
        doc = json.loads(path.read_text())
        doc["target"] = target
        for e in doc.get("entries", []):
            if e.get("model") == "bad_models:clean":
                e["model"] = target
        path.write_text(json.dumps(doc, indent=1))


def _baseline_damaged(path: Path) -> list[str]:
    try:
        doc = json.loads(path.read_text())
    except Exception as exc:  # noqa: BLE001
        return [f"base.json unreadable ({exc})"]
    n = len(doc.get("entries", []))
    return [] if n >= 3 else [f"base.json has {n} entries, expected the full suite"]


def _last_error_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if "ERROR" in line or "Error" in line or "error" in line:
            return line.strip()[:200]
    return (text.strip().splitlines() or [""])[-1][:200]


def classify(case: Case, rc: int, text: str, extra: str, lost: list[str]) -> tuple[str, str]:
    if lost:
        return "lost", "; ".join(lost)
    if TRACEBACK.search(text) or len(FRAME.findall(text)) >= 2:
        return "traceback", f"rc {rc}"
    pat = re.compile(case.pattern) if case.pattern else None
    seen = bool(pat.search(text + extra)) if pat else True
    if case.expect == "safe":
        if rc != 0:
            return "silent", f"rc {rc} on a case that should pass (false alarm)"
        return ("one-line", "clean run") if seen else ("silent", "the expected note is missing")
    if case.expect == "usage":
        if rc == 0:
            return "silent", "exit 0"
        if rc != 4:
            return ("one-line-wrong-exit" if seen else "silent"), f"rc {rc}, expected 4"
        return ("one-line", "rc 4") if seen else ("silent", "rc 4 but the message does not name the problem")
    if case.expect == "fail":
        if rc == 0:
            return "silent", "exit 0"
        return ("one-line", f"rc {rc}") if seen else ("silent", f"rc {rc}, problem not named")
    if case.expect == "incomplete":
        return ("one-line", f"rc {rc}") if (seen and rc != 0) else ("silent", f"rc {rc}, incomplete={seen}")
    raise ValueError(case.expect)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default=None, help="only cases whose group/name contains this")
    ap.add_argument("-j", type=int, default=2, help="cases run at once")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", default=None, help="write the per-case results here")
    ap.add_argument("--code", default=None, help="import pytest_mlip from this checkout instead of the installed one "
                                                 "(e.g. an export of main, for before/after counts)")
    args = ap.parse_args(argv)
    if args.code:
        CODE[:] = [str(Path(args.code).resolve())]
    todo = [c for c in cases() if not args.k or args.k in f"{c.group}/{c.name}"]
    with ThreadPoolExecutor(args.j) as pool:
        results = list(pool.map(lambda c: run_case(c, args.python), todo))
    groups: dict[str, dict[str, int]] = {}
    for r in results:
        print(f"{r['group']:<10} {r['name']:<32} {r['outcome']:<20} {r['why'][:60]:<60} | {r['tail'][:110]}")
        g = groups.setdefault(r["group"], {})
        g[r["outcome"]] = g.get(r["outcome"], 0) + 1
    kinds = ["one-line", "one-line-wrong-exit", "traceback", "silent", "lost"]
    print(f"\n{'group':<12}" + "".join(f"{k:>21}" for k in kinds) + f"{'total':>8}")
    tot = {k: 0 for k in kinds}
    for g, counts in groups.items():
        print(f"{g:<12}" + "".join(f"{counts.get(k, 0):>21}" for k in kinds) + f"{sum(counts.values()):>8}")
        for k in kinds:
            tot[k] += counts.get(k, 0)
    print(f"{'all':<12}" + "".join(f"{tot[k]:>21}" for k in kinds) + f"{len(results):>8}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
