"""Real servers and misbehaving hosts on loopback: an S3-compatible server (SeaweedFS),
OpenSSH's sshd, an FTP server, a webhook receiver, and hosts that hang or trickle.

Used by `make demo`, the benchmarks and the tests, so that every transport is exercised
against a real peer (scripts/test-servers/install.sh installs what is not from PyPI).
"""
