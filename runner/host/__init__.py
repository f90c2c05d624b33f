"""Host-level controls applied around one mysqld: the single home for everything that changes
the machine rather than the server's configuration.

Modules (one job each):

- (the storage profiles themselves — limits and presets, pure values — are a knob:
  :mod:`core.experiment.storage`);
- :mod:`runner.host.devices` — the block device a directory's I/O reaches, as the throttle
  must name it;
- :mod:`runner.host.cgroups` — per-server cgroups (I/O throttle), joining them before exec,
  their counters, removal and the reaper of groups left by a killed flushbench;
- :mod:`runner.host.proof` — achieved IOPS/bandwidth from counters and the verdict against
  the limits;
- :mod:`runner.host.cpus` — CPU lists and pinning (affinity or cpuset);
- :mod:`runner.host.thp` — transparent huge pages set per run and restored, also after a crash;
- :mod:`runner.host.capabilities` — what this host can do, for ``doctor`` and preflight;
- :mod:`runner.host.identity` — who a worker on this host is (host id, host class, pid): the
  lease owner the ledger writes, the host lock's name;
- :mod:`runner.host.facts` — the host's figures (memory, huge pages, free disk, capabilities),
  read once per run of the checks (the checks themselves are admission's:
  :mod:`runner.admission.checks`).

Nothing here starts mysqld: :mod:`runner.server` composes these around its child process.
"""
