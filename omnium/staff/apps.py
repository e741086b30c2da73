from django.contrib.admin.apps import AdminConfig


class StaffAdminConfig(AdminConfig):
    """Django's admin app with our site as `admin.site` (Django's documented way to replace the
    default site), so every ModelAdmin registered anywhere lands on it."""

    default_site = "omnium.staff.site.StaffAdminSite"
