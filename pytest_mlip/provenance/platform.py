"""The platform a run's model calls were made on: what decides whether a re-run can reproduce them exactly.

Float32 models give the same outputs call after call on one machine (measured: identical across processes), but
not across CPUs: the kernels torch picks differ with the instruction set, and the last digits differ with them.
At collapsed configurations and on some models (DIEP's forces on benzene) those digits grow into large
differences, so the judge re-runs a call exactly only on the run's own platform (reporting/judge_report.py).
"""

from __future__ import annotations

import platform as _platform

#: CPU features that change which float kernels torch and numpy run
_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "neon", "asimd", "sve")


def _cpu() -> tuple[str, list[str], str]:
    """The CPU's model (name, family, model, stepping), its float instruction sets, and a hash of all its flags."""
    import hashlib

    name, flags, ident = "", set(), []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip() and name:  # the first processor's block says it all
                    break
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key in ("model name", "cpu model") and not name:
                    name = value.strip()
                elif key in ("cpu family", "model", "stepping", "cpu implementer", "cpu part") and \
                        f"{key} {value.strip()}" not in ident:
                    ident.append(f"{key} {value.strip()}")
                elif key in ("flags", "features"):
                    flags.update(value.split())
    except OSError:
        pass
    name = name or _platform.processor()  # /proc/cpuinfo's model name first: processor() is often just "x86_64"
    everything = hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:16]
    return ", ".join([name] + ident), sorted(flags & set(_FLAGS)), everything


def fingerprint() -> dict:
    """What must be equal for a model call to be reproducible bit for bit: machine, CPU model and its float
    instruction sets, the numeric libraries' versions."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(package):  # read from the metadata, not imported: the same whatever this process loaded
        try:
            return version(package)
        except PackageNotFoundError:
            return None

    name, flags, everything = _cpu()
    return {"machine": _platform.machine(), "cpu": name, "cpu_flags": flags, "cpu_flags_sha256": everything,
            "python": _platform.python_version(),
            "numpy": installed("numpy"), "torch": installed("torch")}
