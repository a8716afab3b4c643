"""The SQL backends' store operations, one module per aggregate, written once over ``Tx``.

``sqlstore.SqlStore`` combines them; ``SQLiteStore`` and ``PostgresStore`` add transactions,
migrations and tick locks.
"""
