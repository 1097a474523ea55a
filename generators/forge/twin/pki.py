"""The box's certificates and credentials, made fresh for each box with the `openssl` CLI.

- a CA, and a serving certificate it signs for 127.0.0.1 (the API server's, the webhooks');
- the service-account signing key pair (the API server issues tokens, the controller manager
  signs the legacy ones);
- one random bearer token, of a user in `system:masters`: the box's controllers and people use
  it alike (the box does not test the controllers' own RBAC: that is the charts', and they are not
  all here).
Everything lives in the box's state folder (mode 0700) and dies with it.
"""
from __future__ import annotations

import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from forge.errors import ForgeError

ADMIN_USER = "forge-twin-admin"


@dataclass(frozen=True)
class Pki:
    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def serving_cert(self) -> Path:
        return self.folder / "serving.crt"

    @property
    def serving_key(self) -> Path:
        return self.folder / "serving.key"

    @property
    def sa_key(self) -> Path:
        return self.folder / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.folder / "sa.pub"

    @property
    def tokens(self) -> Path:
        return self.folder / "tokens.csv"

    def token(self) -> str:
        return self.tokens.read_text(encoding="utf-8").split(",", 1)[0]


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise ForgeError(f"openssl {args[0]} failed: {done.stderr.strip()[-500:]}")


def make_pki(folder: Path) -> Pki:
    if shutil.which("openssl") is None:
        raise ForgeError("the box makes its certificates with `openssl`, which is not on PATH: install it "
                         "(Debian: apt-get install openssl)")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "30",
             "-subj", "/CN=forge-twin-ca", cwd=folder)
    _openssl("req", *ec, "-keyout", "serving.key", "-out", "serving.csr", "-subj", "/CN=127.0.0.1", cwd=folder)
    (folder / "san.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n"
        "extendedKeyUsage=serverAuth\n", encoding="utf-8")
    _openssl("x509", "-req", "-in", "serving.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "serving.crt", "-days", "30", "-extfile", "san.ext", cwd=folder)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=folder)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=folder)
    # token,user,uid,"group1,group2": the API server's static token file.
    (folder / "tokens.csv").write_text(f"{secrets.token_hex(24)},{ADMIN_USER},{ADMIN_USER},system:masters\n",
                                       encoding="utf-8")
    for path in folder.iterdir():
        path.chmod(0o600)
    return Pki(folder)
