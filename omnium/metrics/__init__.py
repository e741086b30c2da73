"""Prometheus metrics: what each process counts (`families`), where a process group keeps its
counts so that one scrape sees every process (`process_files`), what is read from PostgreSQL
at scrape time (`owed_files`), and the protected `/metrics` endpoint (`views`)."""
