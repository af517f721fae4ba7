"""The pytest plugin: ``pytest --mlip=NAME`` turns contract files into test items.

Options live in the "mlip" group; items are (contract x model) over the target
and its committee; a terminal section tabulates the verdicts. Only hard
contracts on the target fail the run; committee and soft violations are
reported as ``violated`` without failing it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from .errors import MlipError

CONTRACT_GLOB = "mlip_*.toml"

#: provenance store, reports and the CI gate (their own options and hooks)
pytest_plugins = ["pytest_mlip.provenance.plugin", "pytest_mlip.adversary.plugin", "pytest_mlip.reference.plugin"]


def pytest_addoption(parser):
    group = parser.getgroup("mlip", "physics contracts for machine-learning interatomic potentials")
    group.addoption("--mlip", action="store", default=None, metavar="MODEL",
                    help="target model: a registered name (see --mlip-list), NAME=WEIGHTS, a MACE file path, "
                         "or module:factory returning an ASE calculator")
    group.addoption("--mlip-committee", action="store", default=None, metavar="LIST",
                    help="comma-separated committee models, 'none' for the target alone "
                         "(default: one usable shipped model per other family)")
    group.addoption("--mlip-list", action="store_true", default=False,
                    help="list every registered model and whether it is usable here, then exit")
    group.addoption("--mlip-output", action="store", default=None, metavar="DIR",
                    help="folder for worst configurations and run data (default: .mlip under the rootdir)")
    group.addoption("--mlip-recheck-guaranteed", action="store_true", default=False,
                    help="run checks that a model's construction guarantees (skipped with the reason by default)")
    group.addoption("--mlip-no-builtin", action="store_true", default=False,
                    help="do not collect the built-in contract suite, only contract files given or found")
    parser.addini("mlip", "default target model for --mlip", default=None)
    parser.addini("mlip_committee", "default committee (comma-separated or 'none')", default=None)
    parser.addini("mlip_output", "default --mlip-output folder", default=None)
    parser.addini("mlip_paths", "extra folders with contract files to collect when --mlip is given",
                  type="paths", default=[])


def builtin_contracts_dir() -> Path:
    from importlib.resources import files

    return Path(str(files("pytest_mlip.builtin_contracts")))


class MlipSession:
    """Run-wide state: target, committee, output folder, collected verdicts."""

    def __init__(self, config, target: str, committee: list[str]):
        self.config = config
        self.target = target
        self.committee = committee
        out = config.getoption("mlip_output") or config.getini("mlip_output") or ".mlip"
        self.output = (Path(config.rootpath) / out) if not Path(out).is_absolute() else Path(out)
        self.recheck = config.getoption("mlip_recheck_guaranteed")
        self.verdicts: list[dict] = []

    @property
    def models(self) -> list[str]:
        return [self.target] + [m for m in self.committee if m != self.target]


STATE_KEY = pytest.StashKey[MlipSession]()


def _target(config) -> str | None:
    return config.getoption("mlip") or config.getini("mlip") or None


def pytest_cmdline_main(config):
    if config.getoption("mlip_list"):
        from .models.registry import describe, model_names, registry

        rows = [describe(registry()[n]) for n in model_names()]
        cols = ["name", "usable", "elements", "cutoff", "dtype", "conservative", "training", "channel"]
        widths = {c: max(len(c), *(len(str(r[c] if c != "usable" else r[c][:3])) for r in rows)) for c in cols}
        print("  ".join(c.ljust(widths[c]) for c in cols))
        for r in rows:
            print("  ".join(str(r[c] if c != "usable" else r[c][:3].rstrip(":")).ljust(widths[c]) for c in cols))
        missing = [r for r in rows if r["usable"] != "yes"]
        if missing:
            print("\nnot usable here, and how to fix it:")
            for r in missing:
                print(f"  {r['name']}: {r['usable'][4:]}")
        return 0
    return None


# Warnings the model packages raise on every load or call; they say nothing about a model's physics
# and would bury the contract summary (pytest's -W or filterwarnings still override them).
THIRD_PARTY_NOISE = (
    "ignore:Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected:UserWarning",
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning",
    "ignore:Converting a tensor with requires_grad=True to a scalar:UserWarning",
    "ignore:Set OLD_ERROR_HANDLING to false:DeprecationWarning",
    "ignore:Only FixAtoms and FixCartesian is supported by Pymatgen:UserWarning",
    "ignore:Skipping unhashable information:UserWarning",
)


def pytest_configure(config):
    config.addinivalue_line("markers", "mlip_contract: a physics-contract item generated by pytest-mlip")
    config.addinivalue_line("markers", "slow: a long-running contract (slow = true in its file); -m 'not slow' skips it")
    target = _target(config)
    if not target:
        return
    for line in THIRD_PARTY_NOISE:
        config.addinivalue_line("filterwarnings", line)
    from .models.registry import default_committee, resolve

    try:
        entry = resolve(target)
        reason = entry.unavailable(entry.weights)
        if reason:
            raise MlipError(f"model {entry.name!r} is not usable here: {reason}")
        raw = config.getoption("mlip_committee") or config.getini("mlip_committee") or "default"
        if raw.strip().lower() == "none":
            committee = []
        elif raw.strip().lower() == "default":
            committee = default_committee(target)
        else:
            committee = [c.strip() for c in raw.split(",") if c.strip()]
            for c in committee:
                e = resolve(c)
                why = e.unavailable(e.weights)
                if why:
                    raise MlipError(f"committee model {e.name!r} is not usable here: {why}")
    except MlipError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[STATE_KEY] = MlipSession(config, target, committee)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(p) for p in _default_paths(config)]


def _default_paths(config) -> list[Path]:
    """What ``pytest --mlip=X`` collects with no paths: built-in suite + the project's own."""
    paths: list[Path] = []
    if not config.getoption("mlip_no_builtin"):
        paths.append(builtin_contracts_dir())
    root = Path(config.rootpath)
    for p in [root / "contracts", root / "generated_tests", *config.getini("mlip_paths")]:
        p = Path(p)
        if p.is_dir() and any(p.rglob(CONTRACT_GLOB)):
            if all(p.resolve() != q.resolve() for q in paths):
                paths.append(p)
    return paths


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".toml" and file_path.match(CONTRACT_GLOB):
        if parent.config.stash.get(STATE_KEY, None) is not None:
            return ContractFile.from_parent(parent, path=file_path)
    return None


class ContractFile(pytest.File):
    def collect(self):
        from .contracts.files import parse_contracts

        try:
            contracts = parse_contracts(self.path)
        except MlipError as exc:
            raise self.CollectError(str(exc)) from None
        state = self.config.stash[STATE_KEY]
        for settings in contracts:
            for model in state.models:
                role = "target" if model == state.target else "committee"
                item = ContractItem.from_parent(self, name=f"{settings.name}[{model}]", settings=settings,
                                                model=model, role=role)
                if settings.slow:
                    item.add_marker(pytest.mark.slow)
                yield item

    class CollectError(Exception):
        pass


class ContractFailure(Exception):
    def __init__(self, verdict):
        self.verdict = verdict


class ContractItem(pytest.Item):
    def __init__(self, *, settings, model, role, **kwargs):
        super().__init__(**kwargs)
        self.settings = settings
        self.model = model
        self.role = role
        self.verdict = None
        self.add_marker("mlip_contract")

    def runtest(self):
        from .contracts import CHECKS
        from .evaluation import evaluator_for
        from .reporting.verdicts import noise_for, save_worst

        state = self.config.stash[STATE_KEY]
        evaluator = evaluator_for(self.model)
        check = CHECKS[self.settings.check]()
        verdict = check.run(self.settings, evaluator, role=self.role, recheck_guaranteed=state.recheck,
                            noise=noise_for(evaluator.name, self.settings.name))
        if verdict.status in ("fail", "error"):
            verdict.worst_file = save_worst(state.output, verdict)
        self.verdict = verdict
        self.user_properties.append(("mlip_verdict", verdict.model_dump_json()))
        if verdict.status == "skip":
            pytest.skip(verdict.reason)
        if verdict.gating:
            raise ContractFailure(verdict)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ContractFailure):
            from .reporting.verdicts import format_failure

            return format_failure(excinfo.value.verdict, self.config.stash[STATE_KEY])
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"{self.settings.check}: {self.name}"


def _verdict_of(report) -> dict | None:
    for key, value in getattr(report, "user_properties", []):
        if key == "mlip_verdict":
            return json.loads(value)
    return None


def pytest_report_teststatus(report, config):
    if report.when == "call" and report.passed:
        v = _verdict_of(report)
        if v and v["status"] in ("fail", "error"):
            return "violated", "v", ("VIOLATED", {"yellow": True})
    return None


def pytest_runtest_logreport(report):
    pass


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    verdicts = []
    for reports in terminalreporter.stats.values():
        for rep in reports:
            if getattr(rep, "when", None) == "call" or getattr(rep, "outcome", None) == "skipped":
                v = _verdict_of(rep)
                if v:
                    verdicts.append(v)
    from .reporting.verdicts import summary_lines

    terminalreporter.section("mlip contracts")
    for line in summary_lines(verdicts, state):
        terminalreporter.write_line(line)
