"""dask's own dashboard pages (``/status`` and the rest, bokeh's) joined to a scheduler distconv
starts once it is at work, not inside its start: importing them takes half a second or more of
the interpreter that starts the cluster, which a cold command needs for its check, its workers
and its submission.

The scheduler starts with its web server and no bokeh pages (``dashboard=False``; distconv's
own page and dask's plain routes are there from the start); this module, a scheduler preload,
imports the pages in a thread of their own once the first tasks arrive (or ``LATER_S`` after the
start, for a cluster left waiting) and joins them on the scheduler's event loop, as dask's start
would have. A scheduler without bokeh gets dask's page saying it is missing.
"""

from __future__ import annotations

import logging
import threading

from distributed.diagnostics.plugin import SchedulerPlugin

PREFIX = "/"  # the scheduler's http_prefix: distconv starts its schedulers with dask's default
LATER_S = 3.0  # a scheduler given no tasks this long after its start gets its pages then
PLUGIN = "distconv-dask-pages"


def dask_setup(scheduler):
    """distributed's preload hook: the pages joined at the first tasks, or after LATER_S."""
    pages = JoinPages(scheduler)
    scheduler.add_plugin(pages, name=PLUGIN, idempotent=True)
    scheduler.loop.call_later(LATER_S, pages.begin)


class JoinPages(SchedulerPlugin):
    """Begins the pages' import (once) when a graph first reaches the scheduler."""

    def __init__(self, scheduler):
        self._scheduler, self._begun = scheduler, threading.Event()

    def update_graph(self, scheduler, **kwargs):
        self.begin()

    async def close(self):
        self._begun.set()  # a scheduler closed before its pages: none imported for it

    def begin(self):
        if self._begun.is_set():
            return
        self._begun.set()
        threading.Thread(target=_import_then_join, args=(self._scheduler,), name="distconv-dask-pages",
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
