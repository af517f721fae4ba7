"""``pytest-mlip detect``: the detective agent from the command line."""

from __future__ import annotations

import argparse
import os
import sys

from ..numbers import Number, argtype


class _Renamed(argparse.Action):
    """Stores the value; an option given by its old name (the second) gets a one-line deprecation note."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string == self.option_strings[-1] and len(self.option_strings) > 1:
            print(f"pytest-mlip detect: {option_string} is deprecated, use {self.option_strings[0]} "
                  "(the name pytest uses)", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_parser(subparsers):
    p = subparsers.add_parser(
        "detect", help="search for failure modes of a target model: hypotheses, probes, escalation reports, tests",
        description="Form falsifiable failure hypotheses from contract evidence, pre-register their predictions, "
                    "probe them on the target and a committee, render escalate/reject verdicts, and write an "
                    "escalation report (with a DFT verification card) and protocol files that pytest collects.")
    # The same option names as pytest's (--mlip, --mlip-committee, --mlip-report, --mlip-store); the
    # earlier names (--target, --committee, --report, --store) still work, with a deprecation note.
    p.add_argument("--mlip", "--target", dest="target", required=True, metavar="MODEL", action=_Renamed,
                   help="the model under inspection (what pytest's --mlip takes)")
    p.add_argument("--mlip-committee", "--committee", dest="committee", default="default", metavar="LIST",
                   action=_Renamed,
                   help="comma-separated committee models (default: one usable shipped model per other family)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--mlip-report", "--report", dest="report", default=None, metavar="DIR", action=_Renamed,
                     help="evidence: a report folder (or report.json) written by pytest --mlip=... --mlip-report=DIR")
    src.add_argument("--mlip-store", "--store", dest="store", default=None, metavar="PATH", action=_Renamed,
                     help="evidence: a provenance store written by pytest (e.g. .mlip/provenance.sqlite); the latest "
                          "finished run on the target")
    p.add_argument("--contracts", default=None, metavar="LIST",
                   help="only these contracts (comma-separated names): the ones gathered, or the ones widened from a "
                        "report or store (default: every contract whose check the planners can write protocols for)")
    p.add_argument("--suite", action="append", default=None, metavar="FILE",
                   help="contract file(s) the evidence and the planner's settings come from instead of the built-in "
                        "suite (repeatable)")
    p.add_argument("--planner", choices=("offline", "anthropic"), default=None,
                   help="who proposes hypotheses (default: anthropic when ANTHROPIC_API_KEY is set, else offline)")
    p.add_argument("--llm-model", default=None, metavar="NAME",
                   help="Anthropic model for --planner anthropic (default $ANTHROPIC_MODEL or claude-opus-5)")
    p.add_argument("--hypotheses", type=argtype(Number("a number of hypotheses", "3", minimum=1), "--hypotheses"), default=3, metavar="N", help="settle at most N hypotheses (default 3)")
    p.add_argument("--escalations", type=argtype(Number("a number of escalations", "1", minimum=1), "--escalations"), default=1, metavar="K",
                   help="stop after K escalations (default 1: the search ends at the first escalation)")
    p.add_argument("--budget", type=argtype(Number("a number of model evaluations", "20000", minimum=1), "--budget"), default=20000, metavar="CALLS",
                   help="model evaluations (real calls, target and committee together) before the search stops")
    from ..evaluation.evaluator import DEFAULT_TIMEOUT, TIMEOUT_NUMBER

    p.add_argument("--mlip-timeout", dest="timeout", default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   type=argtype(Number(**TIMEOUT_NUMBER), "--mlip-timeout"),
                   help=f"seconds one model call may take, as pytest's --mlip-timeout: a call past it is a model "
                        f"error naming the call (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--output", default="mlip-detective", metavar="DIR",
                   help="output folder: memory, escalation reports, provenance store (default mlip-detective)")
    p.add_argument("--memory", default=None, metavar="FILE",
                   help="evidence memory (append-only JSONL; default OUTPUT/memory.jsonl)")
    p.add_argument("--tests-dir", default="generated_tests", metavar="DIR",
                   help="where kept protocol files go, collected by pytest (default generated_tests; 'none' to "
                        "write them only under OUTPUT)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import builtins
    import warnings

    from ..plugin import THIRD_PARTY_NOISE

    for line in THIRD_PARTY_NOISE:  # the model packages' load-time warnings, as in pytest --mlip runs
        _, message, category = line.split(":", 2)
        warnings.filterwarnings("ignore", message=message, category=getattr(builtins, category))
    from ..evaluation.evaluator import set_call_timeout
    from ..models import factory
    from ..models.registry import default_committee

    set_call_timeout(float(args.timeout))

    factory.SEARCH_PATHS[:] = factory.project_paths(os.getcwd())  # a factory is found as pytest run here finds it

    if args.committee.strip().lower() == "default":
        committee = default_committee(args.target)
    elif args.committee.strip().lower() == "none":
        committee = []
    else:
        committee = [c.strip() for c in args.committee.split(",") if c.strip()]
    from ..models.registry import refuse_repeated_models
    from ..plugin import load_users_model

    refuse_repeated_models(args.target, committee)

    for spec in [args.target] + committee:  # the user's factory or model file: its mistakes are one line, as in pytest
        load_users_model(spec, debug="pytest --mlip=... --mlip-debug shows the traceback")
    planner_name = args.planner or ("anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "offline")
    if planner_name == "anthropic":
        from .anthropic_planner import AnthropicPlanner

        planner = AnthropicPlanner.from_environment(model=args.llm_model)
    else:
        from .planner import OfflinePlanner

        planner = OfflinePlanner()
    from .detective import Detective

    tests_dir = None if args.tests_dir.strip().lower() in ("", "none") else args.tests_dir
    det = Detective(args.target, committee, planner, args.output, memory_path=args.memory, tests_dir=tests_dir,
                    budget=args.budget, max_hypotheses=args.hypotheses, max_escalations=args.escalations,
                    report=args.report, store=args.store, argv=sys.argv[1:],
                    contracts=[c.strip() for c in args.contracts.split(",")] if args.contracts else None,
                    suite_files=args.suite)
    summary = det.run()
    print(f"detective: {len(summary.hypotheses)} hypothesis(es), {len(summary.escalations)} escalated; "
          f"{summary.evaluations} model evaluations in {summary.seconds:.1f} s"
          + (f"; {summary.tokens.get('input_tokens', 0)} input / {summary.tokens.get('output_tokens', 0)} output "
             "tokens" if summary.tokens.get("calls") else "") + f"; stopped: {summary.stopped}")
    for x in summary.hypotheses:
        print(f"  {x['hypothesis'].id} {x['verdict'].verdict:<9} {x['hypothesis'].key}")
    for f in summary.files:
        print(f"  wrote {f}")
    print(f"  report: {det.out / 'report.md'}")
    if getattr(summary, "root", None):
        print(f"mlip root: {summary.root}")
    if summary.broken:  # garbage out: the evidence says nothing about a law (the report says so too)
        print(f"pytest-mlip: detect: {summary.broken}", file=sys.stderr)
        return 1
    return 0
