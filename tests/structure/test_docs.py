"""The docs say what the code does: the OpenAPI reference in the docs is the schema this code
serves, and the README stays a front page (its depth lives in docs/, built by `make test`)."""

import re
from pathlib import Path

from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


def test_the_openapi_reference_in_the_docs_is_the_schema_the_server_serves(tmp_path):
    served = tmp_path / "openapi.yaml"
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(served))
    committed = ROOT / "docs" / "reference" / "openapi.yaml"
    assert served.read_text() == committed.read_text(), (
        "docs/reference/openapi.yaml is not what /v1/schema serves: regenerate it "
        "(the command is in docs/reference/openapi.md)")


def test_the_readme_is_a_front_page_and_its_links_lead_somewhere():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 20_000, "the README's depth belongs in docs/"
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    missing = [target for target in targets if "://" not in target and not (ROOT / target).exists()]
    assert targets and missing == []


def test_the_redis_key_table_in_the_docs_is_the_key_map():
    from omnium.redis_keys import KEYS

    table = (ROOT / "docs" / "operations" / "redis-keys.md").read_text()
    documented = re.findall(r"^\| `([^`]+)` \| (\w+) \| (\w+) \|", table, re.MULTILINE)
    assert documented == [(key.pattern, key.server, key.kind) for key in KEYS], (
        "docs/operations/redis-keys.md differs from omnium/redis_keys.KEYS")


def test_the_documented_acl_of_the_pull_caches_redis_user_is_the_one_tested():
    from omnium.redis_keys import pull_cache_acl_rules

    documented = (ROOT / "docs" / "operations" / "redis-keys.md").read_text()
    assert "ACL SETUSER omnium-pull " + " ".join(pull_cache_acl_rules("<password>")) in documented
