"""Who may use the pull API at all: a valid key's client, or staff in the browsable API."""

from rest_framework.permissions import BasePermission

from omnium.pullapi.catalogue import PullClient


class KeyHolderOrStaff(BasePermission):
    def has_permission(self, request, view):
        user = request.user
        return isinstance(user, PullClient) or bool(getattr(user, "is_staff", False))
