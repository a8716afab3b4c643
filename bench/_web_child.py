"""One dashboard process for ``bench_web``'s instruction counts: ``N`` requests of a page through the
real ASGI app, or ``N`` calls of the raw reads that page needs, on a store the bench already seeded.

    python -m bench._web_child page|raw PAGE N STORE_URL      (PAGE: a key of bench_web.PAGES)

``N`` = 0 counts the set-up alone (imports, the store, the app, ``WARM`` requests and reads), which
the bench subtracts from both; the set-up's objects are then frozen out of the garbage collector.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from datetime import UTC, datetime

from bench.bench_web import PAGES, _config, _get
from tickloop.operator.store import open_store
from tickloop.web.app import create_app

#: requests (and reads) the set-up makes before counting. With one, the counted runs still paid a
#: one-off ~1 M instructions (the interpreter specialising the request's code, first uses of caches):
#: a tenth of the intent page's 10 counted requests, so its figure moved with N (2.23 at 10, 2.16 at
#: 40). After ten it is the same per request at any N, as in a server that has answered a few pages.
WARM = 10


def main(mode: str, page: str, n: int, url: str) -> None:
    path, raw = PAGES[page]
    with open_store(url, create=False) as store:
        app, board = create_app(store, _config())
        cookie = board.sessions.start(now=datetime.now(UTC)).id
        loop = asyncio.new_event_loop()
        for _ in range(WARM):
            assert loop.run_until_complete(_get(app, path, cookie)) == 200
            raw(board.reads)
        # The set-up's objects are frozen out of the collector: a full collection of them landing in
        # one run and not another moved a count by up to half; the requests' own garbage is still collected.
        gc.collect()
        gc.freeze()
        for _ in range(n):
            if mode == "page":
                loop.run_until_complete(_get(app, path, cookie))
            else:
                raw(board.reads)
        loop.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
