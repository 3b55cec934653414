"""dask's own dashboard pages (``/status`` and the rest, bokeh's) joined to a scheduler distconv
starts once it runs, not inside its start: importing them takes about half a second of the
command's one interpreter, which a cold command would otherwise wait for before its workers.

The scheduler starts with its web server and no bokeh pages (``dashboard=False``; distconv's
own page and dask's plain routes are there from the start); this module, a scheduler preload,
imports the pages in a thread of their own and joins them on the scheduler's event loop, as
dask's start would have. A scheduler without bokeh keeps dask's page saying it is missing.
"""

from __future__ import annotations

import logging
import threading

PREFIX = "/"  # the scheduler's http_prefix: distconv starts its schedulers with dask's default


def dask_setup(scheduler):
    """distributed's preload hook: the pages imported beside the running scheduler."""
    threading.Thread(target=_import_then_join, args=(scheduler,), name="distconv-dask-pages",
                     daemon=True).start()


def _import_then_join(scheduler):
    try:
        import distributed.dashboard.scheduler as pages
    except ImportError:  # no bokeh: dask's page that says so
        pages = None
    try:
        scheduler.loop.add_callback(_join, scheduler, pages)
    except RuntimeError:  # the scheduler's loop has closed meanwhile
        pass


def _join(scheduler, pages):
    """On the scheduler's loop: its bokeh application added to its web server (once)."""
    app = getattr(scheduler, "http_application", None)
    if app is None or getattr(app, "_distconv_dask_pages", False) or scheduler.status.name in ("closing", "closed"):
        return
    app._distconv_dask_pages = True
    try:
        if pages is None:
            from distributed.http.scheduler import missing_bokeh
            from distributed.http.utils import get_handlers

            app.add_handlers(r".*", get_handlers(scheduler, [missing_bokeh.__name__], PREFIX))
        else:
            pages.connect(app, scheduler.http_server, scheduler, prefix=PREFIX)
    except Exception as e:  # noqa: BLE001 - the cluster runs as well without its pages
        logging.getLogger(__name__).warning("dask's dashboard pages were not added (%s)", e)
