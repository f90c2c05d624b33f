"""Reading results: store → frames → stability → compare → plots → report.

Never starts a process and never imports ``runner``. Public API:

- :mod:`analysis.tables.frames` — ``experiments, experiment_info, runs, intervals, samples,
  run_variables, run_summary, cell_summary, representative_runs, varying_knobs, load``
- :mod:`analysis.steadiness.stability` — ``stability`` (score = 100 × p5 / median, CV, holes,
period, trend)
- :mod:`analysis.comparisons.compare` — ``compare, verdict, check_metadata, main_effects,
interactions,
  ranking``
- :mod:`analysis.figures.plots` — ``throughput, checkpoint_dirty, notpm_bars, score_bars,
  stability_heatmap, memory, flushing, threads_sweep``
- :mod:`analysis.report` — ``write_report``
- :mod:`analysis.cli` — ``register(app)`` adds report/compare/show/export to ``flushbench``
"""
