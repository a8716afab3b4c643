"""The person's dashboard (``tickloop web``, extra ``web``): approvals, board, timeline and ledgers.

``pages`` holds one read function per page (no HTTP), ``timeline`` the chart's geometry, ``auth``
the login tokens, sessions, CSRF and rate limit, ``guard`` the guards every route passes and the
login, ``app`` the Starlette routes of the pages, ``server``
the exposure rules and uvicorn. Only ``guard``, ``app`` and ``server`` import the web stack.
"""
