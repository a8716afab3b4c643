"""The operator: an autonomous loop for one person's goals, with its state in a store.

``tickloop.operator.domain`` holds the entities, ``tickloop.operator.intents`` the intent status
machine, ``tickloop.operator.store`` the store and its backends, ``tickloop.operator.service`` the
functions the CLI calls.
"""
