"""tickloop: bounded, auditable loops around language models."""

__version__ = "0.1.0"
