"""Where a person can be reached, whatever the channel: ``player_addresses`` (player, channel, address)
takes the place of the players table's ``telegram_chat_id`` and ``email`` columns, with their data.

Revision ID: 0006
Revises: 0005
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

#: The players table's columns that held an address, and the channel of each.
OLD_COLUMNS = {"telegram_chat_id": "telegram", "email": "email"}


def upgrade() -> None:
    op.create_table(
        "player_addresses",
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("channel", sa.String(32), primary_key=True),
        sa.Column("address", sa.String(254), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    for column, channel in OLD_COLUMNS.items():
        # an empty email was stored as given, and never counted as a way to reach anyone
        op.execute(sa.text(
            f"INSERT INTO player_addresses (player_id, channel, address, updated_at) "
            f"SELECT id, :channel, CAST({column} AS VARCHAR(254)), updated_at FROM players "
            f"WHERE {column} IS NOT NULL AND CAST({column} AS VARCHAR(254)) <> ''").bindparams(channel=channel))
    op.drop_index("ix_players_telegram_chat_id", table_name="players")
    op.drop_index("ix_players_email", table_name="players")
    with op.batch_alter_table("players") as batch:  # SQLite: the table is copied without the columns
        for column in OLD_COLUMNS:
            batch.drop_column(column)


def downgrade() -> None:
    with op.batch_alter_table("players") as batch:
        batch.add_column(sa.Column("telegram_chat_id", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("email", sa.String(254), nullable=True))
    connection = op.get_bind()
    rows = connection.execute(sa.text(
        "SELECT player_id, channel, address FROM player_addresses WHERE channel IN ('telegram', 'email')")).all()
    for player_id, channel, address in rows:
        if channel == "telegram":
            try:
                value: object = int(address)
            except ValueError:  # not a chat id: the older column cannot hold it
                continue
            statement = "UPDATE players SET telegram_chat_id = :value WHERE id = :id"
        else:
            value, statement = address, "UPDATE players SET email = :value WHERE id = :id"
        connection.execute(sa.text(statement), {"value": value, "id": player_id})
    op.create_index("ix_players_telegram_chat_id", "players", ["telegram_chat_id"])
    op.create_index("ix_players_email", "players", ["email"])
    op.drop_table("player_addresses")
