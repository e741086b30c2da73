"""Create the PostgreSQL database named by DATABASE_URL if it does not exist yet."""

import os
import sys
from urllib.parse import urlparse

import psycopg
from psycopg import sql

url = urlparse(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/omnium"))
name = url.path.lstrip("/")
admin = url._replace(path="/postgres").geturl()
with psycopg.connect(admin, autocommit=True) as conn:
    if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        print(f"created database {name}", file=sys.stderr)
