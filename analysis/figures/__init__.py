"""Figures: the drawing tools every wing above uses, and the figures of one experiment's
series and cells.

- :mod:`.plots` — one Plotly figure per function, styled for a blog post; the palette, the
  baseline's colour and each cell's colour in row order (``cell_colours``), and the helpers a
  figure elsewhere starts from (``titled_figure``, ``shade_window``, ``legend_below``);
- :mod:`.small_multiples` — one panel per cell on shared axes;
- :mod:`.distributions` — per-interval boxes with each run's mean, every run's stability score;
- :mod:`.png_export` — PNGs drawn by background kaleido renderers;
- :mod:`.png_cache` — rendered PNGs kept by content.

Imports only :mod:`analysis.reading` (memory series, the cache) and :mod:`analysis.statistics`:
a figure judges nothing and compares nothing; the wings that judge draw with these tools.
"""
