"""One BLAS thread for the analysis: small matrix products, and a machine others share.

The stability tests (:mod:`analysis.statistics.oscillation`) multiply small matrices (about
100 surrogate series × 180 intervals × a few hundred frequencies) for every run. OpenBLAS
splits each product over every core and its threads spin while they wait; on a 2-core machine
that other jobs load, that made ``run_summary`` of 500 runs take 136 s of wall time instead of
2 s (docs/benchmarks.md). One thread is as fast when the machine is quiet and does not
collapse when it is not. threadpoolctl limits the BLAS that numpy actually loaded, whatever
the import order, and restores it on exit, so a notebook keeps its own setting outside.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from threadpoolctl import threadpool_limits


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with BLAS (OpenBLAS, MKL…) limited to one thread."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
