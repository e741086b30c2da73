"""Who gets what: clients, their destinations and subscriptions (push), keys and entitlements (pull).

- `models`: Client, Destination (kind + JSON settings + encrypted credentials), Subscription,
  ApiKey, Entitlement; `shapes`: a client's shape (transform and marks), pulled and pushed alike.
- `credentials`: the Fernet key ring; `secrets_manager`: credentials read from an AWS secret
  a destination refers to; `key_format`: what a pull key looks like and how it is
  kept; `key_issuing`: a new key shown once.
- `address_policy_settings`: which addresses destinations may reach, as the settings say (the
  policy itself is `transports.address_policy`); `system_destinations`: the pull cache's own
  destinations, kept by Omnium.
- `file_names`: where a subscription puts a file; `transforms/`: JSON, XML, legacy shapes.
- `packages`: a bundle of feeds applied to destinations or clients in one step.
- `audit`: who paused, resent, tested or applied a package, in the admin's history.
- `forms`, `setting_fields`, `host_keys`, `admin`: editing them (typed fields from each
  transport's declarations, an SFTP host key confirmed by a person; delivery's actions on
  destinations live in `delivery.admin`); `apps`: wiring at start; `management/`: the
  `rotate_credentials` command.
"""
