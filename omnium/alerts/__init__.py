"""Alerts: one open alert per subject (`service`), with notices sent by `channels/` (Slack,
email) from their own queue (`notices`, `tasks`), and the resolution sent too."""
