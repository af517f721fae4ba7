"""The evidence memory: an append-only JSONL file, the only carry-over between runs.

Each line is one record: evidence the run started from, a hypothesis, its
pre-registration, each probe report, each verdict (rejections carry their
reasons), protocol files written, and human verdicts added later. The file is
opened in append mode only and never rewritten; each record carries the hash
of the line before it, so an edit of earlier lines is detected on reading. A
later run reads this file, not old reports (reading old reports would bias new
hypothesis formation).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Iterator

from ..errors import MlipError, loads_json

RECORD_TYPES = ("run", "evidence", "hypothesis", "preregistration", "probe", "verdict", "status", "protocol_file",
                "human_verdict", "planner")


class MemoryError_(MlipError):
    """The memory file cannot be read or appended to."""


def _digest(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()[:16]


class EvidenceMemory:
    """Append-only JSONL memory at ``path`` (created on first append)."""

    def __init__(self, path):
        self.path = Path(path)
        self._records: list[dict] | None = None
        self._last_line: str | None = None
        self.broken: list[str] = []

    def foreign(self) -> str | None:
        """Why the file is not an evidence memory (None for a new, empty or memory file): its first line is not a
        record (a held-out case: records were appended to a user's text file)."""
        if not self.path.exists():
            return None
        if not self.path.is_file():
            return "is not a regular file"
        try:
            with open(self.path, encoding="utf-8") as fh:
                first = next((line for line in fh if line.strip()), None)
        except (OSError, UnicodeDecodeError) as exc:
            return f"cannot be read as an evidence memory ({exc})"
        if first is None:
            return None
        try:
            rec = loads_json(first)
        except json.JSONDecodeError:
            rec = None
        if not isinstance(rec, dict) or not {"type", "prev"} <= set(rec):
            return "is not a pytest-mlip evidence memory (its first line is not a memory record)"
        return None

    # --- reading -----------------------------------------------------------------------------------------------
    def _load(self) -> list[dict]:
        if self._records is not None:
            return self._records
        records: list[dict] = []
        prev = None
        self.broken = []
        if self.path.exists():
            try:
                text = self.path.read_text()
            except (OSError, UnicodeDecodeError) as exc:
                raise MemoryError_(f"cannot read the evidence memory {self.path} ({exc}); pass another "
                                   "--memory FILE") from None
            for n, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rec = loads_json(line)
                except json.JSONDecodeError:
                    self.broken.append(f"line {n}: not JSON (a run killed while writing?); ignored")
                    prev = _digest(line)
                    continue
                if rec.get("prev") != prev:
                    self.broken.append(f"line {n}: hash chain broken (an earlier line was edited or removed)")
                records.append(rec)
                prev = _digest(line)
                self._last_line = line
            if text and not text.endswith("\n"):
                self.broken.append("last line incomplete; the next record starts on a new line")
        self._records = records
        self._prev = prev
        return records

    def records(self, type: str | None = None) -> list[dict]:
        return [r for r in self._load() if type is None or r["type"] == type]

    def __iter__(self) -> Iterator[dict]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    # --- writing -------------------------------------------------------------------------------------------------
    def append(self, type: str, data: Any, run: str | None = None) -> dict:
        """Append one record (never rewrites the file); returns it."""
        if type not in RECORD_TYPES:
            raise ValueError(f"unknown memory record type {type!r}")
        self._load()
        rec = {"seq": len(self._records), "type": type, "run": run, "time": round(time.time(), 3),
               "prev": self._prev, "data": json_safe(data)}
        line = json.dumps(rec, sort_keys=True, separators=(",", ":"), default=_default)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        needs_newline = self.path.exists() and self.path.stat().st_size > 0 and not self._ends_with_newline()
        try:
            with open(self.path, "a", encoding="utf-8") as fh:
                if needs_newline:
                    fh.write("\n")
                fh.write(line + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise MemoryError_(f"cannot append to the evidence memory {self.path} ({exc.strerror}); pass a "
                               "writable --memory FILE") from None
        self._records.append(loads_json(line))
        self._prev = _digest(line)
        return rec

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    # --- views ---------------------------------------------------------------------------------------------------
    def hypotheses(self) -> dict[str, dict]:
        """Every hypothesis with its latest status and reasons (folded over status/verdict records)."""
        out: dict[str, dict] = {}
        for r in self._load():
            if r["type"] == "hypothesis":
                out[r["data"]["id"]] = dict(r["data"])
            elif r["type"] == "status" and r["data"]["hypothesis"] in out:
                h = out[r["data"]["hypothesis"]]
                h["status"] = r["data"]["status"]
                h["reasons"] = list(r["data"].get("reasons", []))
        return out

    def settled_keys(self) -> set[str]:
        return {h["key"] for h in self.hypotheses().values() if h.get("status") != "open"}

    def next_hypothesis_id(self) -> str:
        numbers = [int(h[1:]) for h in self.hypotheses() if h[1:].isdigit()]
        return f"H{max(numbers, default=0) + 1}"

    def probes(self, hypothesis: str | None = None) -> list[dict]:
        return [r["data"] for r in self.records("probe") if hypothesis is None or r["data"]["hypothesis"] == hypothesis]

    def evidence(self) -> list[dict]:
        return [r["data"] for r in self.records("evidence")]

    def protocols_run(self) -> list[dict]:
        """Every protocol table pre-registered so far (for the no-repeat rule)."""
        out = []
        for r in self.records("preregistration"):
            for p in r["data"]["predictions"]:
                out.append(p["protocol"])
        return out


def json_safe(obj):
    """A copy with non-finite floats as the strings 'inf', '-inf', 'nan' (strict JSON) and numpy as Python."""
    import math

    try:
        import numpy as np

        if isinstance(obj, np.generic):
            obj = obj.item()
        elif isinstance(obj, np.ndarray):
            obj = obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "model_dump"):
        return json_safe(obj.model_dump(mode="python"))
    return obj


def _default(obj):
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, float):
        return str(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")
