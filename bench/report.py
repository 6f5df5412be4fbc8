"""Shared by the bench/ harnesses: machine facts, the commit, and the
section-by-section rewrite of BENCHMARKS.md (each harness owns the text
between its own markers)."""
import datetime
import os
import platform
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = (
    "# Benchmarks\n\n"
    "Numbers measured by the harnesses under `bench/`; each section is rewritten by its own\n"
    "harness (between its markers) and says how to reproduce it.\n"
)


# (vendor, family, first model, last model) -> core name, for the CPUs whose
# model name alone ("AMD EPYC" on a VM) does not say which they are.
CORE_NAMES = [
    ("AuthenticAMD", 25, 0x00, 0x0F, "Zen 3"),
    ("AuthenticAMD", 25, 0x20, 0x2F, "Zen 3"),
    ("AuthenticAMD", 25, 0x10, 0x1F, "Zen 4"),
    ("AuthenticAMD", 25, 0x60, 0xAF, "Zen 4"),
    ("AuthenticAMD", 26, 0x00, 0xFF, "Zen 5"),
    ("GenuineIntel", 6, 0x8F, 0x8F, "Sapphire Rapids"),
    ("GenuineIntel", 6, 0xCF, 0xCF, "Emerald Rapids"),
    ("GenuineIntel", 6, 0x6A, 0x6A, "Ice Lake"),
]


def cpu_info():
    """(model, CPUs, AVX-512?): the model name with its core and vector units, e.g.
    'AMD EPYC (Zen 3, family 25 model 1; AVX2+FMA, no AVX-512)'."""
    model, cpus, avx512 = platform.processor() or "unknown", os.cpu_count(), False
    vendor, family, number, flags = "", None, None, []
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, val = line.partition(":")
            key, val = key.strip(), val.strip()
            if key == "Model name":
                model = val
            elif key == "CPU(s)":
                cpus = int(val)
            elif key == "Flags":
                flags = val.split()
                avx512 = "avx512f" in flags
            elif key == "Vendor ID":
                vendor = val
            elif key == "CPU family":
                family = int(val)
            elif key == "Model":
                number = int(val)
    except (OSError, subprocess.CalledProcessError, ValueError):
        pass
    core = next(
        (name for v, f, lo, hi, name in CORE_NAMES if v == vendor and f == family and number is not None and lo <= number <= hi),
        None,
    )
    units = "AVX-512" if avx512 else ("AVX2+FMA, no AVX-512" if "avx2" in flags and "fma" in flags else "no AVX2")
    if "amx_tile" in flags:
        units += ", AMX"
    where = ", ".join(p for p in (core, f"family {family} model {number}" if family is not None else None) if p)
    model = f"{model} ({where + '; ' if where else ''}{units})"
    return model, cpus, avx512


def git_commit():
    def git(*a):
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True)

    try:
        head = git("rev-parse", "--short", "HEAD")
    except OSError:  # no git (the GPU machine): the pack's record, if any
        rec = os.path.join(REPO, ".gpu", "commit.txt")
        return open(rec).read().split()[0] if os.path.exists(rec) else "unknown commit"
    commit = head.stdout.strip() if head.returncode == 0 else "no commit"
    if git("status", "--porcelain", "--untracked-files=no").stdout.strip():
        commit += "-dirty"
    return commit


def markers(name):
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def write_section(path, name, section):
    """Replaces the text between the markers of `name` (or appends it)."""
    begin, end = markers(name)
    text = open(path).read() if os.path.exists(path) else HEADER
    if begin in text and end in text and text.index(begin) < text.index(end):
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        text = head + section.rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(text)


def provenance(command):
    """The machine, date, commit and command lines every section starts with."""
    model, cpus, avx512 = cpu_info()
    return [
        f"- machine: {model}, {cpus} CPUs, avx512f {'yes' if avx512 else 'no'}",
        f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC; commit: {git_commit()}",
        f"- command: `{command}`",
    ]


def publish(name, lines, output, write=True):
    """Prints the section `name` made of `lines` and, when `write`, puts it in `output`."""
    begin, end = markers(name)
    section = "\n".join([begin, *lines, end, ""])
    print(section)
    if write:
        write_section(output, name, section)
