"""The Store interface, one abstract class per aggregate (as ``sqlops/`` implements them).

``base.Store`` combines them with the lifecycle (close, migrations, tick locks).
"""
