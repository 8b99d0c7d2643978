"""Alembic environment: runs on the connection the engine hands over (sync, inside run_sync)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlmodel import SQLModel

from services.engine import tables  # noqa: F401  (registers the tables)
from shared.delivery import tables as delivery_tables  # noqa: F401

config = context.config
target_metadata = SQLModel.metadata


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
