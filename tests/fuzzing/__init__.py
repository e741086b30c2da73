"""Property-based tests: whatever comes in, a clear refusal or a valid result, never a crash.

Bounded (FUZZ: 50 examples, no deadline) so that each file runs in seconds.
"""

from hypothesis import HealthCheck, settings

# Function-scoped fixtures (the database, a generated Games) are shared by the examples of one
# test on purpose: each example leaves the data as valid as it found it.
FUZZ = settings(max_examples=50, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
