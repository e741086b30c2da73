from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "omnium.reports"
    verbose_name = "Reports"
