"""Content negotiation for the pull API: JSON problems for clients, HTML only when a browser asks.

Files bypass renderers altogether (they are sent as stored); this only picks how an error
or the staff's browsable view is rendered, without DRF's full Accept parsing on every hit.
"""

from rest_framework.negotiation import BaseContentNegotiation


class PullNegotiation(BaseContentNegotiation):
    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        if "text/html" in request.META.get("HTTP_ACCEPT", ""):
            for renderer in renderers:
                if renderer.media_type == "text/html":
                    return renderer, renderer.media_type
        return renderers[0], renderers[0].media_type
