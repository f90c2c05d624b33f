"""The experiment model: pure, below the runner and the analysis.

Owns the experiment file's typed model (``spec``: the whole file and its cell; ``sections``:
dataset, workload, window…; ``cells``: expanding the matrix, naming and ordering cells;
``hashes``: the measurement and spec hashes; ``loading``: reading a file and the rules only a
file is held to), the knobs (``knob_table``: every knob once; ``knobs``: the typed models
generated from it; ``storage``: emulated storage profiles), the workload drivers as facts
(``drivers``), reference results (``references``), ``file_credentials`` (a file carries no
credentials), a cell's knobs in server terms (``translation``), the record a worker replays
(``queued``, with its format version) and the typed reader of a stored experiment
(``stored``). It imports only ``core`` and third-party libraries; translating knobs for a
server is ``runner.knobs``, running a driver ``runner.workloads``.
"""
