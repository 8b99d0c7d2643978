"""The Telegram gateway's inbox of updates: an update is committed here before the next getUpdates
confirms it to Telegram, deleted once handled, and handled again after a crash
(``services/telegram_gateway/polling.py``). The same columns as the bus's ``inbox``.

Revision ID: 0007
Revises: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "update_inbox",
        sa.Column("message_id", sa.String(200), primary_key=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_update_inbox_seq", "update_inbox", ["seq"])


def downgrade() -> None:
    op.drop_index("ix_update_inbox_seq", table_name="update_inbox")
    op.drop_table("update_inbox")
