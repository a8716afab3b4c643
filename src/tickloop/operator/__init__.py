"""The operator: an autonomous loop for one person's goals, with its state in a store.

``domain`` holds the entities, ``intents`` the intent status machine, ``store`` the store and its
backends, ``service`` the functions the CLI calls, ``runner`` the one-shot tick process, ``ticks``
the five ticks, ``gate``/``drift``/``attention``/``conditions`` the pure rules they apply.
"""
