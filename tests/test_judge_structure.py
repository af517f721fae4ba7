"""The judge compares rendered files by structure: what CommonMark (or HTML) parses, not the text.

Each case is an edit of a small Markdown or HTML text shaped like the report's: whitespace that
Markdown gives meaning to and markup inside code or links must be refused; reflowed whitespace
and emphasis around text must be approved. And free-text notes are refused, whatever they say.
"""

from __future__ import annotations

import pytest
from pathlib import Path

from pytest_mlip.reporting.structure import first_difference, hidden_text, html_events, markdown_events

MD = """# pytest-mlip report: `sevennet-0`

- run: `abc123`
- target: `sevennet-0`; committee: `chgnet-0.3.0`

## Verdict matrix

Worst normalized violation v/tau per contract and model; above one the contract fails.

| contract | `sevennet-0` (target) | `chgnet-0.3.0` |
|---|---|---|
| `repulsive-wall-dimers` | FAIL [a:0123456789ab] · 2.00 [a:aaaaaaaaaaaa] | pass [a:bbbbbbbbbbbb] · 0.500 [a:cccccccccccc] |
| `zero-net-force` | pass [a:dddddddddddd] · 0.0999 [a:eeeeeeeeeeee] | pass [a:ffffffffffff] · 0.100 [a:111111111111] |

![matrix](figures/matrix.png)

## Failures

### `repulsive-wall-dimers` on `sevennet-0`

- verdict: FAIL [a:0123456789ab], hard contract, v/tau -0.0999 [a:aaaaaaaaaaaa]
- reason: the energy falls as the atoms approach

```
pytest --mlip=sevennet-0 -k "repulsive-wall-dimers"
```
"""


def same(a: str, b: str = MD) -> bool:
    return first_difference(markdown_events(a), markdown_events(b)) is None and hidden_text(a, b) is None


LEGITIMATE = {
    "reflowed paragraph": MD.replace("per contract and model; above", "per contract\nand   model;\n  above"),
    "reflowed list item": MD.replace("- reason: the energy falls", "- reason: the energy\n  falls"),
    "table padding": MD.replace("| `zero-net-force` | pass", "|   `zero-net-force`    |    pass"),
    "blank lines": MD.replace("## Failures\n", "\n\n## Failures\n\n"),
    "bold verdict": MD.replace("- verdict: FAIL", "- verdict: **FAIL**"),
    "emphasis in a cell": MD.replace("| FAIL [a:0123", "| *FAIL* [a:0123"),
    "setext heading": MD.replace("## Failures\n", "Failures\n--------\n"),
    "other bullet": MD.replace("- reason:", "* reason:").replace("- verdict:", "* verdict:"),
    "trailing spaces": MD.replace("- run: `abc123`", "- run: `abc123`   "),
    "crlf": MD.replace("\n", "\r\n"),
}

FABRICATED = {
    "joined table rows": MD.replace(" |\n| `zero-net-force`", " | | `zero-net-force`"),
    "joined heading": MD.replace("## Failures\n\n###", "## Failures ###"),
    "indented code block": MD.replace("\nWorst normalized", "\n    Worst normalized"),
    "space in a number": MD.replace("· 2.00", "· 2. 00"),
    "cell moved to a bullet": MD.replace("v/tau -0.0999", "v/tau\n- 0.0999"),
    "star in a code span": MD.replace("`repulsive-wall-dimers` |", "`repulsive-wall-*dimers` |"),
    "star in a link target": MD.replace("figures/matrix.png", "figures/matrix*.png"),
    "html comment": MD.replace("## Failures", "## Failures <!-- 0.5 -->"),
    "entity": MD.replace("v/tau -0.0999", "v/tau &#45;0.0999"),
    "escape": MD.replace("hard contract", "hard contract\\!"),
    "heading level": MD.replace("### `repulsive", "#### `repulsive"),
    "list kind": MD.replace("- verdict:", "1. verdict:").replace("- reason:", "2. reason:"),
    "code block text": MD.replace('-k "repulsive-wall-dimers"', '-k "zero-net-force"'),
    "cell swapped": MD.replace("FAIL [a:0123456789ab] · 2.00", "pass [a:0123456789ab] · 2.00"),
    "zero-width space": MD.replace("2.00", "2.\u200b00"),
    "no-break space": MD.replace("hard contract", "hard\u00a0contract"),
    "strikethrough": MD.replace("FAIL [a:0123456789ab], hard", "~~FAIL~~ [a:0123456789ab], hard"),
    "alignment": MD.replace("|---|---|---|", "|---|:---:|---|"),
    "reference definition": MD + '\n[note]: <https://x.org> "SevenNet passes every contract"\n',
    "cell past the header": MD.replace("0.100 [a:111111111111] |", "0.100 [a:111111111111] | *0.5*"),
    "closing heading sequence": MD.replace("## Failures", "## Failures ## 0.5"),
    "link title": MD.replace("(figures/matrix.png)", '(figures/matrix.png "all pass")'),
}


@pytest.mark.parametrize("name", sorted(LEGITIMATE))
def test_legitimate_markdown_edits_are_approved(name):
    assert same(LEGITIMATE[name]), first_difference(markdown_events(LEGITIMATE[name]), markdown_events(MD))


@pytest.mark.parametrize("name", sorted(FABRICATED))
def test_structure_changing_markdown_edits_are_refused(name):
    assert FABRICATED[name] != MD
    assert not same(FABRICATED[name])


HTML = """<!doctype html><html><head><title>r</title></head><body>
<h2>Verdict matrix</h2>
<table><tr><th>contract</th><th><code>sevennet-0</code></th></tr>
<tr><td><code>repulsive-wall-dimers</code></td><td><span class="fail">FAIL</span><span class="aid" title="artifact 0123">a:0123</span> · <span class="num">2.00</span></td></tr>
</table>
<p>See <a href="figures/matrix.png">the matrix</a>.</p>
<pre>pytest --mlip=sevennet-0  -k x</pre>
</body></html>
"""


def test_html_is_compared_by_structure():
    def same_html(a):
        return first_difference(html_events(a), html_events(HTML)) is None

    assert same_html(HTML)
    assert same_html(HTML.replace("<tr><td>", "\n  <tr>\n    <td>").replace("</h2>", "</h2>\n\n"))
    assert same_html(HTML.replace('class="aid" title="artifact 0123"', "title='artifact 0123'  class=\"aid\""))
    assert same_html(HTML.replace("See <a", "See\n   <a"))
    for bad in (HTML.replace("FAIL", "pass"), HTML.replace("2.00", "2. 00"),
                HTML.replace("</h2>", "</h2><!-- 0.5 -->"), HTML.replace("· <span", "&#183; <span"),
                HTML.replace('<span class="num">', '<span class="num" style="display:none">'),
                HTML.replace("matrix.png", "matrix2.png"), HTML.replace("  -k x", " -k x"),
                HTML.replace("</table>", "<tr><td>pass</td></tr></table>"),
                HTML.replace("<h2>Verdict", "<h3>Verdict").replace("matrix</h2>", "matrix</h3>")):
        assert not same_html(bad), bad


@pytest.mark.parametrize("text", ["p.a.s.s", "Reviewed by the materials group; see the curves.",
                                  "Reviewers agreed it behaves as it should.", ""])
def test_free_text_notes_are_refused_whatever_they_say(text):
    """A judged report holds no free text: a word list was talked around by every fresh tester, so a comment
    note is refused as malformed, with the fix (typed notes; discussion outside the report)."""
    from pydantic import ValidationError

    from pytest_mlip.reporting.claims import parse_notes

    with pytest.raises(ValidationError, match="free text is not part of a judged report.*typed notes"):
        parse_notes([{"kind": "comment", "text": text}])


def test_report_json_with_a_duplicate_key_is_refused(tmp_path):
    """A key written twice shows one reader the first value and Python the last: the judge refuses the file
    (a held-out attack put "status": "pass" before the real "fail" and was approved)."""
    import json as _json
    import shutil

    from pytest_mlip.reporting.judge_report import judge_report

    src = Path(__file__).resolve().parent.parent / "docs" / "example-report"
    dst = tmp_path / "rep"
    shutil.copytree(src, dst)
    text = (dst / "report.json").read_text()
    assert text.lstrip().startswith("{")
    (dst / "report.json").write_text(text.replace("{", '{"verdicts": [], ', 1))
    try:
        result = judge_report(dst, sample=0, replay=0)
    except Exception as exc:  # refused as unusable input
        assert "twice" in str(exc)
    else:
        assert not result.ok
    _json.loads((dst / "report.json").read_text())  # plain json would have taken the last value silently


def test_a_value_note_may_drop_the_trailing_zeros_of_the_reports_rounding():
    """A held-out-6 legitimate note: 0.3 for an artifact the report prints as 0.300 is the same number."""
    from pytest_mlip.reporting.claims import number_mismatch

    assert number_mismatch("0.3", 0.3) is None and number_mismatch("0.300", 0.3) is None
    assert number_mismatch("0.3", 0.3004) is None  # the report prints 0.300: the same number
    assert number_mismatch("0.3", 0.3051) is not None  # coarser than the report's rounding (0.305)
    assert number_mismatch("0.4", 0.3) is not None


@pytest.mark.parametrize("note", [
    {"kind": "count", "n": "3", "m": 4, "status": "pass"},
    {"kind": "count", "n": 3.0, "m": 4, "status": "pass"},
    {"kind": "count", "n": 3, "m": 4, "status": "pass", "hard": "yes"},
    {"kind": "exists", "model": "emt", "ran": 1},
    {"kind": "value", "artifact": "abcdef12", "value": 0.5, "unit": "eV"},
])
def test_a_note_of_the_wrong_type_is_refused_not_coerced(note):
    """Held-out case: a count of "3" and a boolean "yes" were coerced and judged as 3 and True."""
    import pydantic

    from pytest_mlip.reporting.claims import parse_notes

    with pytest.raises(pydantic.ValidationError):
        parse_notes([note])
    ok = {k: v for k, v in note.items()}
    ok.update({"n": 3} if "n" in note else {})
    if note["kind"] == "count" and note.get("hard") == "yes":
        ok["hard"] = True
    if note["kind"] == "count":
        assert parse_notes([ok])[0].n == 3
