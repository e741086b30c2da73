"""The registry of transforms: name -> transform. It also gives the model field its choices."""

from omnium.clients.transforms.json_identity import JsonTransform
from omnium.clients.transforms.legacy import LegacyTransform
from omnium.clients.transforms.xml import XmlTransform

TRANSFORMS = {t.name: t() for t in (JsonTransform, XmlTransform, LegacyTransform)}


def choices() -> list[tuple[str, str]]:
    return [(name, t.label) for name, t in TRANSFORMS.items()]
