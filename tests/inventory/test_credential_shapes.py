"""Issue 26, credentials: every shape the scanner knows is refused wherever it stands in an
inventory (a value, a key, a comment), with file:line and never the value itself, so nothing
credential-like reaches a generated file, the plan cache or a message. The tokens are built from
parts, so no scanner flags this file."""
from __future__ import annotations

import base64

import pytest

from forge.inventory import credentials
from tests.helpers import H200_FILE, edit, inventory_text, line_of, problems

H200 = inventory_text("h200")
HEX40 = "0123456789abcdef" * 2 + "01234567"
SHAPES = {
    "db-options-password": ("host=db.internal " + "pass" + "word=Tr0ub4dor-and-3", "password"),
    "userinfo-without-scheme": ("flyte" + ":" + "s3cretPassw0rd" + "@db.exa.internal:5432/flyte", "user:password@host"),
    "hex-token-as-user-name": (f"https://{HEX40}@github.com/exa-labs/forge.git", "token as its user name"),
    "security-token-query": ("https://s3.amazonaws.com/b/k?X-Amz-" + "Security-Token=FwoGZXIvYXdzEBYaDMx", "query"),
    "hugging-face-token": ("hf" + "_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567", "Hugging Face"),
    "jwt": ("ey" + "JhbGciOiJIUzI1NiJ9.ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "JWT"),
    "base64-access-key": (base64.b64encode(("AK" + "IA" + "IOSFODNN7EXAMPLE").encode()).decode(), "base64 of an AWS access key id"),
    "base64-secret-key": (base64.b64encode(("wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY").encode()).decode(), "base64 of"),
    "high-entropy-word": ("Zq8" + "vT2mXw9LkP4rY7nB1cHs6dJf", "high entropy"),
}


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
@pytest.mark.parametrize("where", ["value", "comment"])
def test_each_credential_shape_is_refused_and_never_echoed(shape, where):
    token, words = SHAPES[shape]
    anchor = "    grafana_url: https://grafana.h200.exa.internal"
    new = (f"{anchor}\n    # owner note: {token}" if where == "comment" else
           f"{anchor}\n    loki_datasource_uid: \"{token}\"")
    text = edit(H200, anchor, new)
    found = problems(text)
    line = line_of(text, token)
    assert any(p.startswith(f"{H200_FILE}:{line}:") and words in p for p in found), found
    assert all("Kubernetes Secret" in p for p in found), found
    assert token not in "\n".join(found)


@pytest.mark.parametrize("text", [
    "git@github.com:exa-labs/forge.git", "ssh://git@github.com/exa-labs/forge.git", HEX40, "sslmode=require",
    "NVIDIA-H200-141GB-HBM3e", "https://grafana.h200.exa.internal/d/abc?orgId=1", "supermicro-as-4124go-nart+",
    "nvidia.com/mig-1g.18gb", "the password: Secret flyte-db (key password)", "gpu-h200-r01-n01.exa.internal",
])
def test_ordinary_text_is_not_a_credential(text):
    assert credentials.find_in_text(text) == []
