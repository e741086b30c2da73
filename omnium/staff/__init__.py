"""Who may use the admin, and how they prove it.

- `site`: the admin site every staff page hangs on (Django's, through django-otp's), and its
  sign-in form: the password, then the code of an authenticator app for those who set one up.
- `sign_in_budget`: at most one password check a second per process, so that a flood of
  sign-ins cannot take the pull API's cores.
- `authenticator`: the page where a person sets up (or removes) their authenticator app.
- `password_hashing`: how passwords are stored (Argon2id, cheap in CPU for a flood).
- `apps`: makes that site Django's default admin site.
"""
