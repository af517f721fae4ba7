"""Structure-aware comparison of a rendered report with the file a person hands in.

The judge re-renders report.md and report.html from report.json and compares
them with the given files. A text comparison that ignores whitespace is fooled
by whitespace that Markdown gives meaning to (a joined table row, a 4-space
indent that makes a code block, a line that starts with ``-``). So both sides
are parsed, Markdown with a CommonMark parser (markdown-it-py, tables on) and
HTML with the standard library's parser, and compared as a sequence of
structural events. Allowed, and only that:

- Markdown: whitespace CommonMark itself collapses (line breaks inside a
  paragraph, runs of spaces or tabs in text, table padding, blank lines
  between blocks, the marker of a heading or list item), emphasis and strong
  emphasis (``*`` or ``_``) around text;
- HTML: whitespace runs in text (outside ``<pre>``), whitespace next to a
  block-level tag, attribute order and quoting, the case of tag names.

Everything else is compared exactly: block types and their nesting, heading
levels, list kinds and start numbers, table cells and alignment, code spans
and blocks, link and image targets, raw HTML, entities and escapes, comments.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_WS = re.compile(r"[ \t\n\r\f\v]+")

#: tokens whose open/close marks only emphasis: dropped (documented as legitimate)
_EMPHASIS = {"em_open", "em_close", "strong_open", "strong_close"}
#: text-like inline tokens whose content is joined and whitespace-collapsed
_TEXT = {"text", "softbreak", "hardbreak"}


def _parser():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    # keep an escape or an entity as its own token (text_join would merge it into the text around it)
    md.core.ruler.disable("text_join")
    return md


def _inline(children) -> list[tuple]:
    out: list[tuple] = []
    buf: list[str] = []

    def flush():
        if buf:
            s = _WS.sub(" ", "".join(buf)).strip()
            if s:
                out.append(("text", s))
            buf.clear()

    for t in children or ():
        if t.type in _EMPHASIS:
            continue
        if t.type == "text":
            buf.append(t.content)
        elif t.type in ("softbreak", "hardbreak"):
            buf.append(" ")
        else:
            flush()
            if t.type == "text_special":
                out.append(("special", t.markup, t.content))
            elif t.type == "code_inline":
                out.append(("code", t.content))
            elif t.type == "image":
                out.append(("image", t.attrGet("src"), t.attrGet("title"), tuple(_inline(t.children))))
            elif t.type == "link_open":
                out.append(("link", t.attrGet("href"), t.attrGet("title")))
            elif t.type == "html_inline":
                out.append(("html", t.content))
            else:
                out.append((t.type,))
    flush()
    return out


def markdown_events(text: str) -> list[tuple]:
    """The block structure and inline content of a Markdown text, as CommonMark (with tables) parses it."""
    out: list[tuple] = []
    env: dict = {}
    tokens = _parser().parse(text, env)
    # link reference definitions print nothing but are markup all the same: a hidden one is a change
    for label, ref in sorted((env.get("references") or {}).items()):
        out.append(("reference", label, ref.get("href"), ref.get("title")))
    for t in tokens:
        if t.type == "inline":
            out += _inline(t.children)
        elif t.type in ("fence", "code_block"):
            out.append((t.type, t.info.strip(), t.content))
        elif t.type == "html_block":
            out.append(("html_block", t.content.strip()))
        elif t.type == "ordered_list_open":
            out.append((t.type, t.attrGet("start") or 1))
        elif t.type in ("th_open", "td_open"):
            out.append((t.type, t.attrGet("style")))
        elif t.type in ("paragraph_open", "paragraph_close"):
            out.append((t.type,))  # tight and loose lists differ only in hidden paragraphs: blank lines are free
        else:
            out.append((t.type, t.tag))
    return out


#: what a reader sees of a Markdown source: every character but whitespace and the marks legitimate edits change
_VISIBLE = re.compile(r"[^\s#=*+_-]+")


_QUOTE = re.compile(r"(?m)^[ ]{0,3}(?:>[ ]?)+")


def _unquote(text: str) -> str:
    """Block-quote marks at line starts: a quoted paragraph wrapped with ``> `` on its continuation lines is the same
    quote (the parse compares the structure; a held-out legitimate reflow was refused for the extra ``>``)."""
    return _QUOTE.sub("", text)


def hidden_text(given: str, want: str) -> str | None:
    """Characters of the Markdown source the parser drops (a cell past the header's count, a closing sequence of a
    heading, ...): the sources must hold the same visible characters in the same order, whatever the parse, but for
    the marks a legitimate edit may add, drop or change (emphasis ``*`` ``_``, a bullet ``-`` ``+`` ``*``, a setext
    underline ``=`` ``-``, an ATX ``#``). None when they do; else the given text around the first difference."""
    g, w = "".join(_VISIBLE.findall(_unquote(given))), "".join(_VISIBLE.findall(_unquote(want)))
    if g == w:
        return None
    i = next((k for k, (x, y) in enumerate(zip(g, w)) if x != y), min(len(g), len(w)))
    return g[max(0, i - 20):i + 20]


# --- HTML ---------------------------------------------------------------------------------------------------------

_BLOCK = {"html", "head", "body", "title", "meta", "link", "style", "script", "div", "p", "h1", "h2", "h3", "h4",
          "h5", "h6", "ul", "ol", "li", "table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption", "section",
          "article", "header", "footer", "nav", "figure", "figcaption", "blockquote", "hr", "br", "img", "pre",
          "details", "summary", "dl", "dt", "dd", "main", "aside", "!doctype"}


class _Events(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.events: list[tuple] = []
        self.pre = 0

    def _tag(self, kind, tag, attrs=()):
        self.events.append((kind, tag, tuple(sorted((k, v) for k, v in attrs))))
        if tag == "pre":
            self.pre += 1 if kind == "start" else (-1 if kind == "end" and self.pre else 0)

    def handle_starttag(self, tag, attrs):
        self._tag("start", tag, attrs)

    def handle_startendtag(self, tag, attrs):
        self._tag("start", tag, attrs)

    def handle_endtag(self, tag):
        self._tag("end", tag)

    def handle_data(self, data):
        self.events.append(("pre" if self.pre else "data", data))

    def handle_entityref(self, name):
        self.events.append(("entity", name))

    def handle_charref(self, name):
        self.events.append(("charref", name))

    def handle_comment(self, data):
        self.events.append(("comment", data))

    def handle_decl(self, decl):
        self.events.append(("decl", _WS.sub(" ", decl).strip().lower()))

    def handle_pi(self, data):
        self.events.append(("pi", data))

    def unknown_decl(self, data):
        self.events.append(("unknown_decl", data))


def html_events(text: str) -> list[tuple]:
    """Tags (attributes sorted), text (whitespace collapsed; dropped next to block tags), entities, comments."""
    p = _Events()
    p.feed(text)
    p.close()
    raw = p.events
    out: list[tuple] = []
    for i, e in enumerate(raw):
        if e[0] != "data":
            out.append(e)
            continue
        s = _WS.sub(" ", e[1])
        prev = raw[i - 1] if i else None
        nxt = raw[i + 1] if i + 1 < len(raw) else None
        if prev is None or (prev[0] in ("start", "end", "decl", "comment") and prev[1] in _BLOCK) \
                or prev[0] in ("decl", "comment"):
            s = s.lstrip()
        if nxt is None or (nxt[0] in ("start", "end") and nxt[1] in _BLOCK) or nxt[0] in ("decl", "comment"):
            s = s.rstrip()
        if s:
            if out and out[-1][0] == "data":
                out[-1] = ("data", _WS.sub(" ", out[-1][1] + s))
            else:
                out.append(("data", s))
    return out


def first_difference(given: list[tuple], want: list[tuple]) -> tuple[int, str, str] | None:
    """None when equal; else (index, what the given file has there, what the rendering has)."""
    for i, (g, w) in enumerate(zip(given, want)):
        if g != w:
            return i, _show(g), _show(w)
    if len(given) != len(want):
        i = min(len(given), len(want))
        return i, _show(given[i]) if i < len(given) else "(end)", _show(want[i]) if i < len(want) else "(end)"
    return None


def _show(e: tuple) -> str:
    s = " ".join(str(x) for x in e)
    return s if len(s) <= 90 else s[:87] + "..."
