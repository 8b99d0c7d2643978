"""The delivery core: each channel's durable outbox, the events it has handled, the messages it
edits in place, and its memory of each game.

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "delivery_outbox",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("channel", sa.String(20), nullable=False),
        sa.Column("game_id", sa.String(100), nullable=False),
        sa.Column("event_id", sa.String(200), nullable=False),
        sa.Column("recipient", sa.String(320), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_delivery_outbox_pending", "delivery_outbox", ["channel", "state", "id"])
    op.create_table(
        "delivery_handled",
        sa.Column("channel", sa.String(20), primary_key=True),
        sa.Column("event_id", sa.String(200), primary_key=True),
    )
    op.create_table(
        "delivery_slots",
        sa.Column("channel", sa.String(20), primary_key=True),
        sa.Column("slot", sa.String(200), primary_key=True),
        sa.Column("ref", sa.String(200), nullable=False),
    )
    op.create_table(
        "delivery_games",
        sa.Column("channel", sa.String(20), primary_key=True),
        sa.Column("game_id", sa.String(100), primary_key=True),
        sa.Column("blob", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    for table in ("delivery_games", "delivery_slots", "delivery_handled", "delivery_outbox"):
        op.drop_table(table)
