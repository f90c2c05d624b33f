"""The tiny TPC-C experiment file the runner's real-server tests write (1 warehouse, 1
connection, 2 s warmup, seconds-long runs): the same code path as a 30-minute run.

One connection, and with the Go driver a fixed rate (``rate``, default 1,200 NOTPM: about 45
transactions a second, 40 New-Orders in a 2 s interval): a closed loop drives the server as
fast as it can, and a run of one connection flat out kept a core busy for its whole life while
``make test`` runs its test workers beside each other — the suite was CPU-bound on its own
test runs. A run's figures are not what these tests check; its life is. ``rate=None`` runs
the closed loop (the tests of what a flat-out run does).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

#: The tiny runs' fixed rate (NOTPM; see the module docstring).
TEST_RATE = 1200


def tiny_tpcc_experiment(tmp_path: Path, name: str, body: str = "", *, duration: str = "6s",
                         report_interval: str = "2s", sampling: str = "2s",
                         repetitions: int = 1, driver: str | None = "tpcc",
                         connections: int = 1, workload: str = "",
                         server: str | Path = "mariadb-debian", warmup: str = "2s",
                         start_jitter: str = "0", rate: int | None = TEST_RATE) -> Path:
    """Write ``<tmp_path>/<name>.yaml`` and return its path.

    ``body`` is appended as written (dedented): a ``matrix``, ``fixed`` knobs, a policy.
    Dirty pages are not drained before the run (seconds matter more than a clean start here).
    No start offsets unless ``start_jitter`` says (``pre_run.start_jitter``: by default a
    repeated cell's runs each warm up a drawn 0–120 s longer, at full speed — minutes of CPU
    the tests of two repetitions spent and none of them checked but the offsets' own test).
    ``driver=None`` leaves ``workload.driver`` out (the default, ``auto``); ``workload`` adds
    keys to the workload mapping as written (``rate: 600``); ``rate`` is the Go driver's fixed
    rate when neither names one (None: flat out). ``server`` is a profile's name
    or file (a fetched, added or built server's).
    """
    # The fixed rate only where the Go driver runs and the caller sets no rate of its own
    # (in `workload`, or a `rate` knob in `body`).
    if rate is not None and driver == "tpcc" and "rate" not in workload \
            and not re.search(r"\brate\b", body):
        workload = f"rate: {rate}" + (f", {workload}" if workload else "")
    more = f", {workload}" if workload else ""
    named = "" if driver is None else f"driver: {driver}, "
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""\
        version: 1
        name: {name}
        server: {server}
        base_config: small
        dataset: {{workload: tpcc, warehouses: 1}}
        workload:
          {{{named}connections: {connections}, warmup: {warmup}, duration: {duration},
            report_interval: {report_interval}{more}}}
        sampling: {{interval: {sampling}}}
        repetitions: {repetitions}
        pre_run: {{drain_dirty_pages: false, start_jitter: {start_jitter}}}
        """) + textwrap.dedent(body))
    return path
