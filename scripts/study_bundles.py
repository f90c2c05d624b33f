"""The committed study folders as study bundles, and back.

    .venv/bin/python scripts/study_bundles.py pack [STUDY ...] [-o DIR] [--no-png]
    .venv/bin/python scripts/study_bundles.py unpack BUNDLE [--into FOLDER]

``pack`` makes ``DIR/STUDY.tar.zst`` (default ``reports/bundles/``, which git ignores) from a
committed study folder: a private copy of its results database, migrated to the current
schema, bundled by ``flushbench bundle`` with the experiment file as the reference of the
scorecard. ``unpack`` does the reverse: ``flushbench open`` checks the bundle against its
manifest, then the study's folder gets the bundle's database under its committed name and
the bundle's report (the whole ``report/`` folder, or the few figures a README links).

The repository keeps each study's database, not its bundle: the notebooks, the tests
(``tests/support/recorded.py``) and the READMEs' commands read the database, and a bundle
holds the same rows again (plus its own report). The bundle is made from the folder when it
is wanted; ``tests/analysis/test_study_bundles.py`` checks that the two give the same report.
Every command this script runs is printed, so a reader can run them by hand.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Written here by default: under reports/, which .gitignore keeps out of the repository.
DEFAULT_OUT = ROOT / "reports" / "bundles"


@dataclass(frozen=True)
class Study:
    """One committed study folder and how its bundle is made."""

    folder: str  # relative to the repository
    database: str  # the results database's file name in the folder
    experiment: str
    reference: str | None = None  # the experiment file whose reference results are scored
    #: README figure name → the report's figure it is; empty: the folder keeps report/ whole.
    figures: dict[str, str] = field(default_factory=dict)


STUDIES = {
    "study-2011": Study("docs/study-2011", "stability-2011.sqlite", "stability-2011",
                        reference="experiments/stability-2011.yaml"),
    "allocators": Study("docs/allocators", "allocators-example.sqlite", "allocators-example",
                        figures={"tps-per-configuration.png": "01-tps.png",
                                 "tps-vs-threads.png": "08-threads.png",
                                 "rss-over-time.png": "10-rss-over-time.png",
                                 # glibc at 64 threads is the report's third configuration.
                                 "rss-split-glibc-64.png": "22-memory-cell3.png"}),
}


class StudyError(Exception):
    """One sentence for the user: what is wrong and how to fix it."""


def flushbench(*args: str) -> None:
    """Run one flushbench command (printed first); a failure stops the script."""
    exe = Path(sys.executable).parent / "flushbench"
    command = [str(exe) if exe.exists() else "flushbench", *args]
    print("$", " ".join(["flushbench", *args]), flush=True)
    if subprocess.run(command, check=False).returncode != 0:
        raise StudyError(f"`flushbench {args[0]}` failed (its message is above)")


def pack(name: str, out_dir: Path, *, png: bool = True, source: Path | None = None) -> Path:
    """Bundle one committed study (or ``source``, a copy of its database, as the tests do).

    The committed database is only ever read through a copy.
    """
    study = STUDIES[name]
    target = out_dir / f"{name}.tar.zst"
    with tempfile.TemporaryDirectory(prefix="flushbench-study-") as tmp:
        # A copy: opening the committed file would switch it to WAL and dirty the work tree.
        copy = Path(tmp) / study.database
        shutil.copyfile(source or ROOT / study.folder / study.database, copy)
        flushbench("db", "upgrade", "--db", str(copy))
        args = ["bundle", study.experiment, "--db", str(copy), "-o", str(target), "--force"]
        if study.reference:
            args += ["--reference", str(ROOT / study.reference)]
        flushbench(*args, *([] if png else ["--no-png"]))
    return target


def unpack(bundle: Path, into: Path | None = None) -> Path:
    """Regenerate a study folder's database and report (or figures) from its bundle."""
    with tempfile.TemporaryDirectory(prefix="flushbench-study-") as tmp:
        flushbench("open", str(bundle), "-o", tmp)
        opened = next(p for p in Path(tmp).iterdir() if p.is_dir())
        experiment = json.loads((opened / "MANIFEST.json").read_text())["experiment"]["name"]
        study = next((s for s in STUDIES.values() if s.experiment == experiment), None)
        if study is None:
            raise StudyError(f"{bundle}: holds experiment {experiment!r}, which is no committed"
                             f" study (known: {', '.join(STUDIES)}); use `flushbench open`")
        folder = into or ROOT / study.folder
        figures = opened / "report" / "figures"
        missing = [src for src in study.figures.values() if not (figures / src).is_file()]
        if missing:
            raise StudyError(f"{bundle}: has no {', '.join(missing)} (made with --no-png?)"
                             f" — pack it again without --no-png")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(opened / "results.sqlite", folder / study.database)
        for dst, src in study.figures.items():
            shutil.copyfile(figures / src, folder / dst)
        if not study.figures:
            shutil.rmtree(folder / "report", ignore_errors=True)
            shutil.copytree(opened / "report", folder / "report")
        print(f"{folder}: {study.database} and"
              f" {', '.join(study.figures) or 'report/'} from {bundle}")
        return folder


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("pack", help="bundle committed studies")
    p.add_argument("studies", nargs="*", metavar="STUDY",
                   help=f"one of {', '.join(STUDIES)} (default: all)")
    p.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--no-png", action="store_true", help="report without PNGs (faster)")
    u = verbs.add_parser("unpack", help="regenerate a study folder from its bundle")
    u.add_argument("bundle", type=Path)
    u.add_argument("--into", type=Path, help="folder to write (default: the study's own)")
    args = parser.parse_args(argv)
    unknown = [n for n in getattr(args, "studies", []) if n not in STUDIES]
    if unknown:
        parser.error(f"no study {unknown[0]!r}: choose from {', '.join(STUDIES)}")
    try:
        if args.verb == "pack":
            for name in args.studies or STUDIES:
                print(f"bundle: {pack(name, args.out, png=not args.no_png)}")
        else:
            unpack(args.bundle, args.into)
    except StudyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
