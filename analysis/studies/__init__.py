"""The committed studies' tables scripts: what each write-up under ``docs/`` quotes.

    python -m analysis.studies.generations_tables docs/study-generations/generations.sqlite
    python -m analysis.studies.flash_tables docs/study-2011/stability-2011-flash.sqlite
    python -m analysis.studies.flash_io_breakdown docs/study-2011/stability-2011.sqlite

:mod:`.shared` holds what the scripts share (markdown tables, a private copy of the database,
the sessions table, the entry point). The top wing: it may import any other, none imports it.
"""
