"""Reading results: store → frames → stability → compare → plots → report.

Never starts a process and never imports ``runner``. Public API:

- :mod:`analysis.frames` — ``experiments, experiment_info, runs, intervals, samples,
  run_variables, run_summary, cell_summary, representative_runs, varying_knobs, load``
- :mod:`analysis.stability` — ``stability`` (score = 100 × p5 / median, CV, holes, period, trend)
- :mod:`analysis.compare` — ``compare, verdict, check_metadata, main_effects, interactions,
  ranking``
- :mod:`analysis.plots` — ``throughput, checkpoint_dirty, notpm_bars, score_bars,
  stability_heatmap, memory, flushing, threads_sweep``
- :mod:`analysis.report` — the report wing: ``analysis.report.writer.write_report``
- :mod:`analysis.cli` — ``register(app)`` adds report/compare/show/export to ``flushbench``
"""
