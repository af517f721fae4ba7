"""``pytest-mlip judge REPORT``: re-verify every number of a report against its provenance store."""

from __future__ import annotations


def add_parser(subparsers):
    p = subparsers.add_parser(
        "judge", help="re-verify every number of a report (report.md or report.json) against its provenance store",
        description="Check each claim of a pytest-mlip report: the cited artifact exists, is unaltered, belongs to "
                    "the run, is not stale, its ancestry holds, its value matches the printed number at the printed "
                    "precision, and it is cited where it is printed; every failed hard contract on the target must "
                    "be claimed. Exit status 1 when any check fails.")
    p.add_argument("report", help="path of report.md or report.json")
    p.add_argument("--store", default=None, metavar="PATH",
                   help="provenance store to judge against (default: provenance.sqlite next to the report, "
                        "else the store the report names)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the failed checks and the summary")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from .judge import judge_file

    result = judge_file(args.report, store=args.store)
    print(f"judge: {result.report} against {result.store} (run {result.run})")
    for f in result.findings:
        if f.ok and args.quiet:
            continue
        print("  " + f.line())
    print(result.summary())
    return 0 if result.ok else 1
