"""``assay view``: serve the HTML report of one or more runs on 127.0.0.1 (never on other interfaces), or with
``--label`` a page to label one run's judged outputs.

The servers are the report's (:mod:`assay.report.server`, :mod:`assay.report.labelserver`); this module is the
command line.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from assay.errors import AssayError
from assay.report.pageselect import MAX_PAGE_SAMPLES
from assay.report.server import DEFAULT_PORT, HOST, serve


@click.command("view")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port on 127.0.0.1; 0 picks a free one.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@click.option(
    "--samples",
    "max_samples",
    type=click.IntRange(min=0),
    default=MAX_PAGE_SAMPLES,
    show_default=True,
    help="Samples of each run the page holds (0: all); past it, errored then failing ones first.",
)
@click.option("--label", is_flag=True, help="Serve a page to label the run's judged outputs (RUN/labels.jsonl).")
@click.option("--who", default="", help="With --label: who gives the labels.")
def view_command(
    run_dirs: tuple[Path, ...], port: int, open_browser: bool, max_samples: int, label: bool = False, who: str = ""
) -> None:
    """Serve the HTML report of RUN_DIR [RUN_DIR …] on 127.0.0.1 until Ctrl-C.

    With two or more runs the page compares each with the first. Only this machine can connect.
    With --label, a keyboard-driven page to label one run's judged outputs (j/k, p/f, 1-9).
    """
    if label and len(run_dirs) != 1:
        raise click.UsageError("--label labels one run folder")
    if who and not label:
        raise click.UsageError("--who goes with --label")
    try:
        if label:
            from assay.report.labelserver import serve_labels

            server, _ = serve_labels(run_dirs[0], port, who)
        else:
            server = serve(list(run_dirs), port, max_samples)
    except AssayError as err:
        raise click.ClickException(str(err)) from None
    except OSError as err:
        hint = " (pass --port 0 for a free port)" if port else ""
        raise click.ClickException(f"cannot listen on {HOST}:{port}: {err.strerror or err}{hint}") from None
    url = f"http://{HOST}:{server.server_address[1]}/"
    try:
        what = "the labelling page of 1 run" if label else f"the report of {len(run_dirs)} run(s)"
        click.echo(f"Serving {what} at {url}  (Ctrl-C to stop)")
        sys.stdout.flush()
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        server.server_close()
