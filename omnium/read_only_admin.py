"""The admin base for rows that the pipeline writes and people only look at."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown, never added or changed in the admin. `deletable` says whether a person may
    delete rows (an audit row may go; a Games record changes only through its workflow)."""

    deletable = True

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return self.deletable and super().has_delete_permission(request, obj)
