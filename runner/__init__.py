"""The runner: admission, the fleet, runs, servers, host controls, knob translation, workloads.

Importing it installs the host's look for tpcc_start into the experiment model
(:func:`core.experiment.drivers.install_tpcc_start_probe`), so every process that can run an
experiment resolves ``workload.driver: auto`` the same way, whichever runner module it
imported first.
"""

from runner.workloads import registry as _registry  # noqa: F401 - installs the probe
