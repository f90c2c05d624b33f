"""``flushbench bundle`` and ``flushbench open``: a study in one shareable file, and back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from core.errors import AnalysisError
from core.filecheck import check_output_file
from flushbench.cli import app
from flushbench.cli.console import make_console, say
from flushbench.cli.options import DbOption


@app.command("bundle")
def bundle_cmd(
    experiment: Annotated[str, typer.Argument(help="Experiment name or id.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="The bundle to write:"
                                      " NAME.tar.zst (or .tar.gz).")],
    db: DbOption = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    no_png: Annotated[bool, typer.Option("--no-png", help="Report without PNGs.")] = False,
    reference: Annotated[Path | None, typer.Option(
        "--reference", help="An experiment file whose reference results the bundled report"
        " scores against (as `report --reference`); it goes into the bundle as"
        " reference.yaml.")] = None,
) -> None:
    """Write one experiment as a study bundle: results, experiment file, base config, server
    profile, report, flushbench version and environment facts, with a checked manifest."""
    from analysis.bundle import BundleReference, database_file, make_bundle
    from flushbench.cli.results_verbs import reference_spec
    from store.bundles import compression
    from store.db import ResultsDB, resolve_url

    compression(out)  # the suffix first: nothing is read for a name that cannot be written
    check_output_file(out, "the bundle", error=AnalysisError)
    # The reference file is checked before the database is read (its problems name it).
    ref = None if reference is None else BundleReference(reference, reference_spec(reference))
    if out.exists() and not force:
        raise AnalysisError("the bundle file exists already", where=str(out),
                            fix="choose another name, or pass --force to overwrite it")
    url = resolve_url(db, write=False)
    source = database_file(url)
    if out.resolve() == source.resolve():
        raise AnalysisError("that is the results database itself", where=str(out),
                            fix="write the bundle to another file")
    ResultsDB(db, create=False, write=False).dispose()  # a missing, foreign or old one: refused
    experiment_ref: str | int = int(experiment) if experiment.isdigit() else experiment
    path = make_bundle(source, experiment_ref, out, png=not no_png, reference=ref)
    say(make_console(), f"bundle: {path} ({path.stat().st_size / 1024 / 1024:.1f} MiB)")


@app.command("open")
def open_cmd(
    bundle: Annotated[Path, typer.Argument(help="A bundle made by `flushbench bundle`.")],
    out: Annotated[Path | None, typer.Option(
        "-o", "--out", help="The folder the bundle's own folder is made in (default: beside"
        " the bundle).")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Open into the bundle's folder even though it exists, when none of"
        " the bundle's files is there yet (nothing is ever overwritten).")] = False,
) -> None:
    """Unpack a study bundle into a new folder after checking every file against its manifest
    and the database against its figures, and say how to use it."""
    from core.errors import AnalysisError, FlushbenchError
    from core.filecheck import check_output_dir
    from store.bundles import RESULTS, open_bundle

    parent = out if out is not None else bundle.absolute().parent
    try:
        check_output_dir(parent, "the folder to open the bundle in", error=AnalysisError)
    except FlushbenchError as exc:  # named after the bundle, like every refusal of `open`
        raise AnalysisError(f"-o {parent}: {exc.what}", where=str(bundle), fix=exc.fix) from None
    opened = open_bundle(bundle, parent, force=force)
    folder, manifest = opened.folder, opened.manifest
    console = make_console()
    name = manifest.experiment.name
    say(console, f"{folder}: {name}, made {manifest.made_at.isoformat()} by flushbench"
                 f" {manifest.flushbench_version}; every file matches its manifest, and the"
                 " database its row counts")
    for host in manifest.environment:
        say(console, f"  ran on {host.hostname}: {host.server_flavor} {host.server_version},"
                     f" {host.cpu_count} × {host.cpu_model}, kernel {host.kernel}")
    _say_revision(console, manifest.schema_revision, folder / RESULTS)
    if "report/report.html" in manifest.files:
        say(console, f"report: {folder / 'report' / 'report.html'}")
    # The reference file the bundled report scored against, when it was made with one.
    scored = f" --reference {folder / manifest.reference}" if manifest.reference else ""
    say(console, f"explore: flushbench compare {name} --db {folder / RESULTS}{scored}"
                 f"  (or --db {bundle})")
    say(console, f"rebuild the report: flushbench report {name} --db {bundle}{scored}"
                 " -o REPORT_FOLDER")


def _say_revision(console: Console, revision: str, database: Path) -> None:
    """A database at another schema revision than this flushbench's: what to do first."""
    from store.migrate import head_revision, known_revisions

    head = head_revision()
    if revision == head:
        return
    if revision in known_revisions():
        say(console, f"its database is at schema revision {revision}, this flushbench reads"
                     f" {head}: run `flushbench db upgrade --db {database}` first")
    else:
        say(console, f"its database is at schema revision {revision}, which a newer"
                     " flushbench made: read it with that version")
