"""The tiny TPC-C experiment file the runner's real-server tests write (1 warehouse, 1
connection, 2 s warmup, seconds-long runs): the same code path as a 30-minute run.

One connection, because a tpcc run drives the server as fast as it can: two connections kept
both of the machine's cores busy for the whole run, and ``make test`` runs three test workers
beside each other (a run's figures are not what these tests check; its life is).
"""

from __future__ import annotations

import textwrap
from pathlib import Path


def tiny_tpcc_experiment(tmp_path: Path, name: str, body: str = "", *, duration: str = "6s",
                         report_interval: str = "2s", sampling: str = "2s",
                         repetitions: int = 1, driver: str | None = "tpcc",
                         connections: int = 1, workload: str = "",
                         server: str | Path = "mariadb-debian", warmup: str = "2s",
                         start_jitter: str = "0") -> Path:
    """Write ``<tmp_path>/<name>.yaml`` and return its path.

    ``body`` is appended as written (dedented): a ``matrix``, ``fixed`` knobs, a policy.
    Dirty pages are not drained before the run (seconds matter more than a clean start here).
    No start offsets unless ``start_jitter`` says (``pre_run.start_jitter``: by default a
    repeated cell's runs each warm up a drawn 0–120 s longer, at full speed — minutes of CPU
    the tests of two repetitions spent and none of them checked but the offsets' own test).
    ``driver=None`` leaves ``workload.driver`` out (the default, ``auto``); ``workload`` adds
    keys to the workload mapping as written (``rate: 600``). ``server`` is a profile's name
    or file (a fetched, added or built server's).
    """
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
