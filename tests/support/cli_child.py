"""Many ``flushbench`` invocations in one child process, each with its own result.

A table of cases that each start ``flushbench`` as a subprocess pays an interpreter start and
flushbench's imports per case (1–2 CPU-s each). :func:`run_in_one_child` runs every
invocation through the real entry point (``flushbench.cli.main``, the console script's own
function, with its error boundary) in ONE fresh interpreter instead, one after the other, each
with its own arguments, environment and working directory, and splits the child's stdout and
stderr back into each invocation's own, byte for byte.

A watchdog in the calling process gives each invocation a deadline: one that hangs (opens a
FIFO nobody writes, waits forever) is killed with the child and reported by name as not
finished, and the invocations after it run in a fresh child, so one hang fails one case.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

#: The child: the invocations in turn. Progress ("start N" / "end N CODE") goes to its own
#: pipe for the watchdog; each invocation's end is also marked on stdout and stderr (after a
#: newline of the marker's own), so the parent can cut the streams apart exactly.
CHILD = r"""
import json, os, sys, traceback
tag, spec_path, progress_fd = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.set_inheritable(progress_fd, False)  # never into mysqld or a driver the verb starts
progress = os.fdopen(progress_fd, "w", buffering=1)
with open(spec_path, encoding="utf-8") as f:
    spec = json.load(f)
exec(spec["prelude"])
from flushbench.cli import main
base_env, base_cwd = dict(os.environ), os.getcwd()
out, err = sys.stdout, sys.stderr
for index, args, env, cwd in spec["jobs"]:
    os.environ.clear()
    os.environ.update(base_env)
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    os.chdir(cwd or base_cwd)
    sys.argv = ["flushbench", *args]
    progress.write(f"start {index}\n")
    try:
        main()  # the console script: sys.exit(main())
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # as the interpreter does with sys.exit("text")
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # past the error boundary: what the interpreter would print
        traceback.print_exc()
        code = 1
    for stream in {sys.stdout, sys.stderr, out, err}:
        stream.flush()
    sys.stdout, sys.stderr = out, err  # a verb that swapped them does not silence the next
    marker = f"\n{tag} end {index} {code}\n".encode()
    os.write(1, marker)
    os.write(2, marker)
    progress.write(f"end {index} {code}\n")
"""


@dataclass(frozen=True)
class Invocation:
    """One ``flushbench ARGS``: its name (unique in a batch), arguments, environment changes
    (a value of None unsets the variable), working directory (None: the child's own) and
    the watchdog's limit on it in seconds (None: the batch's)."""

    name: str
    args: Sequence[str]
    env: dict[str, str | None] = field(default_factory=dict)
    cwd: str | os.PathLike[str] | None = None
    deadline_s: float | None = None


@dataclass(frozen=True)
class Outcome:
    """What one invocation did: its exit code (None: it never finished), its stdout and
    stderr, and, when it did not finish, why (``note``)."""

    code: int | None
    out: str
    err: str
    note: str = ""

    @property
    def finished(self) -> bool:
        """Whether the invocation ran to its end (any exit code)."""
        return self.code is not None


def _drain(stream: BinaryIO, into: bytearray) -> None:
    """Read a pipe to its end into ``into``, then close it (a thread each, so a full pipe
    never blocks the child)."""
    with stream:
        while chunk := os.read(stream.fileno(), 1 << 16):
            into += chunk


def _cut(stream: bytes, tag: str) -> tuple[dict[int, tuple[int, str]], str]:
    """Invocation index → (exit code, its text) from a marked stream, and the unmarked rest
    (what the invocation in progress had written when the child stopped)."""
    pattern = re.compile(rb"\n" + re.escape(tag.encode()) + rb" end (\d+) (-?\d+)\n")
    found: dict[int, tuple[int, str]] = {}
    at = 0
    for match in pattern.finditer(stream):
        text = stream[at:match.start()].decode("utf-8", errors="replace")
        found[int(match.group(1))] = (int(match.group(2)), text)
        at = match.end()
    return found, stream[at:].decode("utf-8", errors="replace")


def _one_child(jobs: list[tuple[int, Invocation]], *, prelude: str, env: dict[str, str],
               cwd: Path, deadline_s: float, workdir: Path
               ) -> tuple[dict[int, Outcome], int | None]:
    """Run ``jobs`` in one child until it ends or the watchdog kills it: the outcomes by
    index, and the index of the invocation in progress when the child stopped early (None
    when every job ended)."""
    tag = f"#flushbench-cli-child-{uuid.uuid4().hex}#"
    spec = workdir / f"jobs-{jobs[0][0]}.json"
    spec.write_text(json.dumps({"prelude": prelude, "jobs": [
        (index, list(job.args), job.env, None if job.cwd is None else str(job.cwd))
        for index, job in jobs]}), encoding="utf-8")
    progress_r, progress_w = os.pipe()
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, tag, str(spec), str(progress_w)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=cwd, pass_fds=(progress_w,),
            process_group=0)  # the watchdog kills the verb's own children with it
    finally:
        os.close(progress_w)
    out, err = bytearray(), bytearray()
    readers = [threading.Thread(target=_drain, args=(pipe, buf), daemon=True)
               for pipe, buf in ((child.stdout, out), (child.stderr, err))]
    for reader in readers:
        reader.start()
    limits = {index: job.deadline_s or deadline_s for index, job in jobs}
    started: set[int] = set()
    ended: set[int] = set()
    current: int | None = None  # None before the first start (imports) and between two
    since = time.monotonic()
    killed_after: float | None = None
    pending = b""
    with os.fdopen(progress_r, "rb", buffering=0) as progress:
        while True:
            limit = deadline_s if current is None else limits[current]
            left = limit - (time.monotonic() - since)
            ready, _, _ = select.select([progress], [], [], max(left, 0))
            if not ready:  # the watchdog: the invocation in progress is past its deadline
                killed_after = time.monotonic() - since
                os.killpg(child.pid, signal.SIGKILL)
                break
            chunk = progress.read(1 << 12)
            if not chunk:
                break  # the child ended (normally or not)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                what, index, *_ = line.decode().split()
                if what == "start":
                    current = int(index)
                    started.add(current)
                    since = time.monotonic()
                else:
                    ended.add(int(index))
                    current = None
                    since = time.monotonic()
    child.wait()
    for reader in readers:
        # After a kill, a descendant that left the process group may still hold the pipes:
        # its output is not waited for.
        reader.join(timeout=None if killed_after is None else 10)
    outs, out_rest = _cut(bytes(out), tag)
    errs, err_rest = _cut(bytes(err), tag)
    outcomes = {index: Outcome(code, text, errs[index][1])
                for index, (code, text) in outs.items() if index in errs and index in ended}
    remaining = [index for index, _ in jobs if index not in outcomes]
    if not remaining:
        return outcomes, None
    how = (f"the watchdog killed the child after {killed_after:.0f} s"
           if killed_after is not None else f"the child ended with exit {child.returncode}")
    tail = f"; stderr ends: {err_rest[-3000:]}"
    if current is None and not started:
        # The child never reached a first invocation (its start failed or hung): a fresh
        # child would do the same, so every one left is reported, none retried.
        for index in remaining:
            outcomes[index] = Outcome(None, out_rest, err_rest,
                                      f"never started: {how} before its first invocation{tail}")
        return outcomes, remaining[-1]
    stopped = current if current is not None else remaining[0]
    outcomes[stopped] = Outcome(None, out_rest, err_rest,
                                f"did not finish: {how} during it{tail}")
    return outcomes, stopped


def run_in_one_child(invocations: Sequence[Invocation], *, prelude: str = "",
                     env: dict[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
                     deadline_s: float = 60.0) -> dict[str, Outcome]:
    """Run every invocation through ``flushbench.cli.main`` in one child interpreter, in
    order; name → :class:`Outcome`.

    ``prelude`` is Python the child runs before it imports flushbench (a resource limit);
    ``env`` is the child's environment (default: this process's) and ``cwd`` its working
    directory, each invocation's own changes applied on top and undone after it.
    ``deadline_s`` is the watchdog's limit on each invocation that sets none of its own (and
    on the child's start): past it the child is killed, that invocation's outcome says so, and
    the ones after it run in a new child. An invocation the child never reached (it could not
    start) is reported likewise.
    """
    names = [job.name for job in invocations]
    if len(set(names)) != len(names):
        raise ValueError(f"invocation names must be unique: {names}")
    todo = list(enumerate(invocations))
    outcomes: dict[int, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="flushbench-cli-child-") as workdir:
        while todo:
            done, stopped = _one_child(todo, prelude=prelude, env=dict(env or os.environ),
                                       cwd=Path(cwd or os.getcwd()), deadline_s=deadline_s,
                                       workdir=Path(workdir))
            outcomes |= done
            if stopped is None:
                break
            todo = [(index, job) for index, job in todo if index > stopped]
    return {job.name: outcomes[index] for index, job in enumerate(invocations)}
