"""The first schema: games, events (log and outbox), processed commands, players.

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "games",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(32), nullable=True),
        sa.Column("phase_id", sa.Integer(), nullable=False),
        sa.Column("deadline_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("timeout_seconds", sa.Integer(), nullable=False),
        sa.Column("origin_channel", sa.String(32), nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_games_deadline_at", "games", ["deadline_at"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("game_id", sa.String(200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=True),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("audience", sa.String(16), nullable=False),
        sa.Column("channels", sa.String(200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("published", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("game_id", "seq", name="uq_events_game_seq"),
    )
    op.create_index("ix_events_game_id", "events", ["game_id"])
    op.create_index("ix_events_unpublished", "events", ["published", "id"])
    op.create_table(
        "processed_commands",
        sa.Column("message_id", sa.String(200), primary_key=True),
        sa.Column("game_id", sa.String(200), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_processed_commands_game_id", "processed_commands", ["game_id"])
    op.create_table(
        "players",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("display_name", sa.String(64), nullable=True),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("telegram_chat_id", sa.BigInteger(), nullable=True),
        sa.Column("email", sa.String(254), nullable=True),
        sa.Column("time_zone", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_players_telegram_chat_id", "players", ["telegram_chat_id"])
    op.create_index("ix_players_email", "players", ["email"])


def downgrade() -> None:
    op.drop_table("players")
    op.drop_table("processed_commands")
    op.drop_table("events")
    op.drop_table("games")
