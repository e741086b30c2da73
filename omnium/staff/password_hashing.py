"""How passwords are stored: Argon2id with OWASP's minimum parameters (19 MiB of memory, 2
passes, one lane), instead of Django's default PBKDF2 of a million SHA-256 rounds.

OWASP's Password Storage Cheat Sheet gives the two as equivalent defences. The difference is
the CPU: a PBKDF2 check took 317 ms of a core here, an Argon2id one 24 ms
(docs/decisions/006-admin-sign-in-flood.md). Every sign-in attempt pays it, for unknown user
names too, so a flood of sign-ins costs the pull API 13 times less; and Argon2id's memory
makes a guess on a graphics card dearer than PBKDF2's rounds. Django's own Argon2 parameters
(100 MiB, eight lanes) took 201 ms of CPU across both cores.

A password stored with PBKDF2 (or Django's Argon2 parameters) still works, and Django stores
it again with these at its owner's next sign-in (`must_update`).
"""

from django.contrib.auth.hashers import Argon2PasswordHasher


class OwaspArgon2PasswordHasher(Argon2PasswordHasher):
    # The standard "argon2" encoding, so a stored hash reads with Django's own hasher too.
    time_cost = 2
    memory_cost = 19 * 1024  # KiB
    parallelism = 1
