"""A self-signed certificate for 127.0.0.1 and localhost, made by the real ``openssl`` (TLS test servers)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def self_signed(directory: Path, *, days: int = 1) -> tuple[Path, Path]:
    """``cert.pem`` and ``key.pem`` in ``directory`` (an EC P-256 key), valid ``days`` days."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", str(days), "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return cert, key
