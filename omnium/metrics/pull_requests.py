"""Counts the pull API's responses by status, whatever answered them (a view, a throttle, an
authentication refusal), so it sits outside every other middleware."""

from omnium.metrics.families import pull_requests

PULL_PATHS = ("/v1/", "/getfeeds")


class PullRequestCounter:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path.startswith(PULL_PATHS):
            count(response.status_code)
        return response


def count(status_code: int) -> None:
    pull_requests().labels(str(status_code)).inc()
