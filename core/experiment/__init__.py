"""The experiment model: typed experiment files, matrix expansion, reference results, and
what the queue keeps of an experiment.

Owns: ``spec`` (the YAML model and its cells), ``references`` (published figures a study is
scored against), ``file_credentials`` (an experiment file carries no credentials), ``queued``
(the record a worker replays). Nothing here starts a process or touches a server: it may
import ``core``, ``runner.knobs`` (pure translation) and the workload registry's static facts
(driver names, dataset kinds, the spec problems an adapter refuses), nothing else of the runner.
"""
