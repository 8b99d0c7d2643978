"""Alembic environment: runs on the connection the engine hands over (sync, inside run_sync)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

config = context.config
#: Migrations are written by hand (docs/architecture.md); for ``alembic revision --autogenerate`` a
#: developer hands the tables' metadata in ``config.attributes["target_metadata"]``. Nothing here
#: imports a service: the schema history is the shared floor's, every service's tables in it.
target_metadata = config.attributes.get("target_metadata")


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is None:  # `alembic upgrade head` from the command line, with a sync URL
        engine = create_engine(config.get_main_option("sqlalchemy.url"))
        with engine.connect() as connection:
            _migrate(connection)
            connection.commit()
    else:
        _migrate(connection)


def _migrate(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


run()
