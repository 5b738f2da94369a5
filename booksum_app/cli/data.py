"""``booksum data``: fetch the public data sets the examples and tests use, and say where they are."""

from __future__ import annotations

import os
from pathlib import Path

import click

from booksum_app.cli.base import emit_json, err_console, handle_errors, json_file, json_option
from booksum_app.errors import InputError


@click.group("data")
def data_command() -> None:
    """Public data sets pinned by SHA-256: the BooookScore release and the sample books.

    They go to the user cache dir (BOOKSUM_CACHE_DIR); BOOKSUM_DATA_DIR points at a local copy
    with the same layout (books/, data/booookscore-release/) instead.
    """


@data_command.command("list")
@json_option("the data sets")
@handle_errors
def list_command(json_out: Path | None) -> None:
    """List the data sets, where each one goes and whether it is there."""
    from booksum_app.runners.data import data_root, datasets, missing

    json_file(json_out)  # a bad --json FILE fails before anything is read
    root = data_root(os.environ)
    rows = []
    for ds in datasets().values():
        absent = len(missing(ds, root / ds.into))
        rows.append({"name": ds.name, "present": not absent, "files": ds.count, "missing_files": absent,
                     "path": str(root / ds.into), "description": ds.description})
    if json_out is not None:
        emit_json(json_out, {"kind": "booksum.data-list", "datasets": rows})
        return
    for row in rows:
        state = "present" if row["present"] else f"{row['missing_files']} of {row['files']} files missing"
        click.echo(f"{row['name']}\t{state}\t{row['path']}\t{row['description']}")


@data_command.command("fetch")
@click.argument("name")
@handle_errors
def fetch_command(name: str) -> None:
    """Download data set NAME (files already there with the right checksum are kept); print its path."""
    from booksum_app.runners.data import fetch

    result = fetch(name, os.environ, on_file=lambda path: err_console.print(f"fetched {path}", markup=False,
                                                                             highlight=False))
    if result.downloaded:
        err_console.print(f"{name}: {result.downloaded} file(s) downloaded ({result.bytes / 1e6:.1f} MB), "
                          f"{result.kept} already there, all checksums match", markup=False, highlight=False)
    else:
        err_console.print(f"{name}: all {result.kept} file(s) already there, checksums match", markup=False,
                          highlight=False)
    click.echo(str(result.path))


@data_command.command("path")
@click.argument("name")
@handle_errors
def path_command(name: str) -> None:
    """Print where data set NAME is (exit 2 if it has not been fetched)."""
    from booksum_app.runners.data import ENV_DATA_DIR, data_root, dataset, missing

    ds = dataset(name)
    where = data_root(os.environ) / ds.into
    absent = missing(ds, where)
    if absent:
        raise InputError(f"{name} is not complete at {where} ({len(absent)} of {ds.count} files missing); "
                         f"run `booksum data fetch {name}` or set {ENV_DATA_DIR} to a local copy")
    click.echo(str(where))
