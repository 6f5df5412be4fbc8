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


def cpu_info():
    model, cpus, avx512 = platform.processor() or "unknown", os.cpu_count(), False
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, val = line.partition(":")
            if key.strip() == "Model name":
                model = val.strip()
            elif key.strip() == "CPU(s)":
                cpus = int(val.strip())
            elif key.strip() == "Flags":
                avx512 = "avx512f" in val.split()
    except (OSError, subprocess.CalledProcessError):
        pass
    return model, cpus, avx512


def git_commit():
    def git(*a):
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True)

    head = git("rev-parse", "--short", "HEAD")
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
