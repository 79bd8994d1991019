"""Test certificates (P-256 keys: quick to make), made with the ``openssl`` command at test time: a CA, a server
certificate for 127.0.0.1/localhost, client certificates, and a second CA nobody trusts.

    pki = make_pki(tmp_path)       # paths: pki.ca, pki.server (cert+key PEM), pki.client("alice")
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


class Pki:
    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.ca = self._ca("ca")
        self.rogue_ca = self._ca("rogue-ca")
        self.server = self._leaf("server", "/CN=localhost", "ca", san="subjectAltName=IP:127.0.0.1,DNS:localhost")

    def _ca(self, name: str) -> Path:
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", f"/CN={name}",
                 "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=self.root)
        return self.root / f"{name}.pem"

    def _leaf(self, name: str, subject: str, ca: str, san: str | None = None) -> Path:
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", subject, "-keyout", f"{name}.key",
                 "-out", f"{name}.csr", cwd=self.root)
        ext = self.root / f"{name}.ext"
        ext.write_text((san + "\n") if san else "basicConstraints=CA:FALSE\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
                 "-days", "2", "-out", f"{name}.crt", "-extfile", ext.name, cwd=self.root)
        # Kafka's PEM keystore: the certificate and its key in one file.
        bundle = self.root / f"{name}.pem"
        bundle.write_text((self.root / f"{name}.crt").read_text() + (self.root / f"{name}.key").read_text())
        return bundle

    def client(self, name: str, subject: str, *, rogue: bool = False) -> tuple[Path, Path]:
        """(certificate, key) of a client certificate, signed by the CA (or the rogue CA)."""
        self._leaf(name, subject, "rogue-ca" if rogue else "ca")
        return self.root / f"{name}.crt", self.root / f"{name}.key"


def make_pki(root: Path) -> Pki:
    return Pki(root)
