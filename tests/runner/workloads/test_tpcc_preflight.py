"""Preflight asks the Go driver itself (``tpcc version``) before anything starts.

``workload.client: libmariadb`` with a driver built without the C client, and a driver older
or newer than the JSON format this flushbench reads, are refused by ``validate`` (so by ``plan``,
``queue add`` and ``run`` too) with one sentence: the driver's own for the client, the stale
binary and its rebuild for the format. The stand-ins are the real driver for every command but
``version``; what the real binary answers is tpcc/cmd/tpcc/bounds_test.go's
TestVersionSaysFormatAndClients (for both builds).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from core.paths import tpcc_binary
from tests.support.cli_runner import CliRun

pytestmark = pytest.mark.mysql  # validate runs preflight: the server binary's own checks

#: What a build without the C client says (tpcc/internal/libmariadb/notbuilt.go).
NOT_BUILT = ("this tpcc was built without the libmariadb client (CGO_ENABLED=0 or -tags"
             " nolibmariadb): install libmariadb-dev and rebuild (cd tpcc && go build -o"
             " bin/tpcc ./cmd/tpcc), or run with --client go")
WITHOUT_C_CLIENT = json.dumps({"clients": ["go"], "format": 1, "libmariadb": NOT_BUILT,
                               "type": "version"})


def _stand_in(tmp_path: Path, version_answer: str, code: int = 0) -> Path:
    """The real driver, except that ``version`` prints ``version_answer`` and exits ``code``."""
    script = tmp_path / "tpcc-stand-in"
    (tmp_path / "version.out").write_text(version_answer + "\n")
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = version ]; then cat {tmp_path}/version.out; exit {code}; fi\n'
        f'exec {tpcc_binary()} "$@"\n')
    script.chmod(0o755)
    return script


def _experiment(tmp_path: Path, binary: Path, client: str | None) -> Path:
    workload = {"driver": "tpcc", "connections": 1, "warmup": "2s", "duration": "6s",
                "report_interval": "2s", "binaries": {"tpcc": str(binary)}}
    if client is not None:
        workload["client"] = client
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump({
        "version": 1, "name": "client", "server": "mariadb-debian", "base_config": "small",
        "dataset": {"workload": "tpcc", "warehouses": 1}, "workload": workload,
        "sampling": {"interval": "2s"}}, sort_keys=False))
    return path


def test_libmariadb_with_a_driver_built_without_it_is_refused_in_its_words(
        tmp_path: Path, cli: CliRun) -> None:
    binary = _stand_in(tmp_path, WITHOUT_C_CLIENT)
    code, _, err = cli(["validate", str(_experiment(tmp_path, binary, "libmariadb"))])
    assert code == 2, err
    assert "before starting any server" in err
    assert f"workload.client: libmariadb cannot run with {binary}: {NOT_BUILT}" in " ".join(
        err.split())
    # The same driver runs the Go client.
    code, _, err = cli(["validate", str(_experiment(tmp_path, binary, "go"))])
    assert code == 0, err


@pytest.mark.parametrize(
    ("answer", "code", "said"),
    [
        ('tpcc: unknown command "version"', 2, "exits 2 saying 'tpcc: unknown command"),
        (json.dumps({"type": "version", "format": 2, "clients": ["go"]}), 0, "says format 2"),
        (json.dumps({"type": "version", "clients": ["go"]}), 0, "says format None"),
        (json.dumps({"type": "version", "format": 1, "clients": "go"}), 0,
         "lists clients 'go'"),
        ("[" * 50_000, 0, "exits 0 saying"),
    ],
    ids=["older", "newer", "no-format", "odd-clients", "garbage"],
)
def test_a_driver_of_another_format_is_named_stale(tmp_path: Path, cli: CliRun, answer: str,
                                                   code: int, said: str) -> None:
    binary = _stand_in(tmp_path, answer, code)
    status, _, err = cli(["validate", str(_experiment(tmp_path, binary, None))])
    assert status == 2, err
    flat = " ".join(err.split())
    assert f"{binary} is a stale tpcc driver: `{binary} version` {said}" in flat, flat
    assert "this flushbench reads JSON format 1" in flat and "scripts/setup.sh" in flat
    assert "Traceback" not in err and "internal error" not in err


def test_more_connections_than_the_driver_opens_are_refused(tmp_path: Path,
                                                            cli: CliRun) -> None:
    path = _experiment(tmp_path, tpcc_binary(), None)
    text = path.read_text().replace("connections: 1", "connections: 10001")
    path.write_text(text)
    code, _, err = cli(["validate", str(path)])
    flat = " ".join(err.split())
    assert code == 2, err
    assert (f"{path}: workload.connections: 10,001 connections: the built-in tpcc driver opens"
            " at most 10,000 connections") in flat, flat
    assert "use at most 10,000 connections" in flat
