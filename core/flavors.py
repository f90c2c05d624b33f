"""What is true of a server flavor and version — no process is started here.

The one home of the rules that both the runner (which starts servers) and the analysis (which
reads what they recorded) need: reading ``mysqld --version``, the label used in messages, the
knob-table family, whether a ``SHOW GLOBAL VARIABLES`` value equals a requested one, and the
redo log capacity a set of variables gives. Facts and their sources: ``docs/domain.md``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Literal

from core.units import parse_size

Flavor = Literal["mariadb", "mysql", "percona"]
FLAVORS: tuple[Flavor, ...] = ("mariadb", "mysql", "percona")

_VERSION_RE = re.compile(r"\bVer\s+(\d+)\.(\d+)\.(\d+)(\S*)")


def parse_version(text: str) -> tuple[tuple[int, int, int], Flavor | None]:
    """(version tuple, detected flavor or None) from ``mysqld --version`` output.

    ``mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64`` gives
    ``((10, 11, 19), "mariadb")``; a Percona build says "Percona" in its suffix or comment;
    a plain MySQL build names no flavor (None: the profile's word is taken).

    Raises
    ------
    ValueError
        When the text holds no ``Ver X.Y.Z``.
    """
    m = _VERSION_RE.search(text)
    if not m:
        raise ValueError(f"no version in {text.strip()!r}")
    version = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    lowered = text.lower()
    flavor: Flavor | None = (
        "mariadb" if "mariadb" in lowered else "percona" if "percona" in lowered else None
    )
    return version, flavor


_NUMBER_RE = re.compile(r"\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def version_number(text: str) -> tuple[int, int, int]:
    """``"10.11.19-MariaDB-0+deb12u1"`` (``@@version``) → ``(10, 11, 19)``; missing parts are 0.

    Raises
    ------
    ValueError
        When the text does not start with a version number.
    """
    m = _NUMBER_RE.match(text or "")
    if not m:
        raise ValueError(f"not a server version: {text!r}")
    major, minor, patch = (int(g) if g else 0 for g in m.groups())
    return major, minor, patch


def server_label(flavor: str, version: tuple[int, ...]) -> str:
    """``mariadb-10.11``, ``mysql-8.0.36``: flavor and version as messages and plans show them.

    MySQL/Percona 8.0 keep the patch level, because the knob table changes inside 8.0
    (``innodb_redo_log_capacity`` from 8.0.30).
    """
    if flavor != "mariadb" and tuple(version[:2]) == (8, 0):
        return f"{flavor}-" + ".".join(str(v) for v in version[:3])
    return f"{flavor}-{version[0]}.{version[1]}"


def family(flavor: str, version: tuple[int, ...]) -> str:
    """The knob-table column: ``mariadb``, ``mariadb-old``, ``5.5``, ``5.6`` or ``8.0.30``.

    MariaDB 5.5 (XtraDB 5.5 inside) is ``5.5``; ``mariadb-old`` is MariaDB 10.0–10.4.

    Raises
    ------
    ValueError
        For MySQL/Percona older than 5.5 (the knob table starts there).
    """
    v = tuple(version[:3])
    if flavor == "mariadb" and v < (10, 0):
        # MariaDB 5.5 is MySQL 5.5 with Percona's XtraDB 5.5 as its InnoDB: the 5.5 column.
        return "5.5"
    if flavor == "mariadb":
        return "mariadb" if v >= (10, 5) else "mariadb-old"
    if v < (5, 5):
        raise ValueError(f"{flavor} {'.'.join(map(str, v))} is older than the knob table (5.5+)")
    if v < (5, 6):
        return "5.5"
    if v < (8, 0, 30):
        return "5.6"
    return "8.0.30"


def uses_initialize(flavor: str, version: tuple[int, ...]) -> bool:
    """Whether a datadir is created by ``mysqld --initialize-insecure`` (MySQL/Percona 5.7+).

    MariaDB and MySQL/Percona 5.5/5.6 need an install script (mariadb-install-db,
    mysql_install_db) instead.
    """
    return flavor != "mariadb" and tuple(version[:3]) >= (5, 7, 0)


def resizes_redo(flavor: str, version: tuple[int, ...]) -> bool:
    """Whether InnoDB recreates its redo files itself when their configured size changes.

    MySQL/Percona 5.6.8+ and MariaDB 10.0+ do. MySQL/Percona 5.5 and MariaDB 5.5 refuse to
    start ("log file ./ib_logfile0 is of different size"): after a clean shutdown the old
    ``ib_logfile*`` must be removed, and InnoDB creates new ones of the configured size.
    """
    v = tuple(version[:3])
    if flavor == "mariadb":
        return v >= (10, 0)
    return v >= (5, 6, 8)


# --- values as the server shows them --------------------------------------------------------

#: XtraDB 5.5's flushing method (Percona 5.5.10+ and MariaDB 5.5's name for adaptive_checkpoint)
#: and the switch it depends on.
FLUSHING_METHOD = "innodb_adaptive_flushing_method"
ADAPTIVE_FLUSHING = "innodb_adaptive_flushing"


def inert_flushing_method(variables: Mapping[str, str | None]) -> str | None:
    """The flushing method these server variables set that never acts, or None.

    XtraDB 5.5's master thread runs ``estimate`` and ``keep_average`` only while
    ``innodb_adaptive_flushing`` is ON (``srv_master_thread`` in ``srv0srv.c``:
    ``srv_adaptive_flushing && srv_adaptive_flushing_method == …``, read in Percona Server
    5.5.39 and MariaDB 5.5.44): with the switch OFF a method other than ``native`` is set but
    pages are flushed only by max_dirty_pages_pct and the redo's async/sync points. One rule
    for both sides: the runner's translation note (``runner/knobs/rules.py``) on the options it
    asks for, the scorecard (``analysis/comparisons/scorecard.py``) on the variables each run
    recorded.
    """
    method = variables.get(FLUSHING_METHOD)
    switch = str(variables.get(ADAPTIVE_FLUSHING) or "")
    if method in (None, "", "native") or switch.upper() not in ("0", "OFF", "FALSE"):
        return None
    return str(method)


_BOOL = {"on": "1", "true": "1", "yes": "1", "off": "0", "false": "0", "no": "0"}
_SIZE_RE = re.compile(r"\d+(\.\d+)?\s*[kmgtpe]b?", re.IGNORECASE)


def _as_number(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        pass
    if _SIZE_RE.fullmatch(text):
        try:
            return Decimal(parse_size(text))
        except ValueError:
            return None
    return None


def values_equal(expected: str, actual: str | None) -> bool:
    """Whether a ``SHOW GLOBAL VARIABLES`` value is the requested one, as the server means it.

    Case-insensitive; ``ON``/``OFF``/``true``/``yes`` equal ``1``/``0``; numbers compare
    numerically (``60`` == ``60.000000``); sizes compare as bytes (``128M`` == ``134217728``).
    A missing value (None) never equals anything.
    """
    if actual is None:
        return False
    e, a = str(expected).strip().lower(), str(actual).strip().lower()
    if e == a:
        return True
    e, a = _BOOL.get(e, e), _BOOL.get(a, a)
    if e == a:
        return True
    en, an = _as_number(e), _as_number(a)
    return en is not None and an is not None and en == an


# --- redo log ---------------------------------------------------------------------------------

#: innodb_log_file_size when nothing sets it (MariaDB 10.5+ and MySQL 5.6+ default: 96M/48M
#: differ; 96M is MariaDB's, the embedded default server).
DEFAULT_LOG_FILE_SIZE = 96 * 1024**2


def _bytes(text: str | None) -> int | None:
    if text is None or str(text).strip() == "":
        return None
    try:
        return parse_size(str(text))
    except ValueError:
        try:
            return int(float(text))
        except ValueError:
            return None


def redo_capacity(variables: Mapping[str, str | None], flavor: str | None = None,
                  version: tuple[int, ...] | None = None) -> int | None:
    """Total redo log bytes that a set of server variables gives.

    ``innodb_redo_log_capacity`` (MySQL 8.0.30+) wins; else ``innodb_log_file_size`` ×
    ``innodb_log_files_in_group``; where that variable is absent, the flavor's default group:
    two files for MySQL/Percona before 8.0.30 and for MariaDB before 10.5 (5.5 to 10.4), one
    for MariaDB 10.5+ (a single redo file). None when no size is known.

    Parameters
    ----------
    variables:
        Underscored lowercase variable names → value text (my.cnf options, or
        ``SHOW GLOBAL VARIABLES`` of a run).
    flavor, version:
        Decide the default number of files when ``innodb_log_files_in_group`` is absent;
        no flavor counts one file, MariaDB of unknown version one (10.5+, today's servers).
    """
    capacity = _bytes(variables.get("innodb_redo_log_capacity"))
    if capacity is not None:
        return capacity
    size = _bytes(variables.get("innodb_log_file_size"))
    if size is None:
        return None
    files = _bytes(variables.get("innodb_log_files_in_group"))
    if files is None:
        # MariaDB before 10.5 (the knob table's 5.5 and mariadb-old columns) keeps two files.
        files = 2 if flavor in ("mysql", "percona") or (
            flavor == "mariadb" and version is not None and family(flavor, version) != "mariadb"
        ) else 1
    return size * files
