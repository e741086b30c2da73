"""How the OpenAPI schema (/v1/schema) describes our key authentication."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "omnium.pullapi.keys.ApiKeyAuthentication"
    name = "pullKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "Your key (omk_…) as `Authorization: Bearer omk_…`, or in an `X-Api-Key` header.",
        }
