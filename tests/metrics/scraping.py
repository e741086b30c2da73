"""Reading a /metrics answer: one sample's value by name and labels."""

import requests
from prometheus_client.parser import text_string_to_metric_families


def scrape(base_url: str, token: str) -> str:
    response = requests.get(f"{base_url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=5)
    response.raise_for_status()
    return response.text


def sample(text: str, name: str, **labels) -> float:
    """The sum of the samples called `name` whose labels include `labels` (0 if none)."""
    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == name and labels.items() <= s.labels.items())
