"""Who gets what: clients, their destinations and subscriptions (push), keys and entitlements (pull).

- `models`: Client, Destination (kind + JSON settings + encrypted credentials), Subscription,
  ApiKey, Entitlement.
- `credentials`: the Fernet key ring; `keys`: what a pull key looks like and how it is kept.
- `file_names`: where a subscription puts a file; `transforms/`: JSON, XML, legacy shapes.
- `forms`, `admin`: editing them (delivery's actions on destinations live in `delivery.admin`).
"""
