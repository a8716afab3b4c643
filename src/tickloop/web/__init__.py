"""The person's dashboard (``tickloop web``, extra ``web``): approvals, board, timeline and ledgers.

``pages`` holds one read function per page (no HTTP), ``timeline`` the chart's geometry, ``auth``
the login tokens, sessions, CSRF and rate limit, ``app`` the Starlette routes and guards, ``server``
the exposure rules and uvicorn. Only ``app`` and ``server`` import the web stack.
"""
