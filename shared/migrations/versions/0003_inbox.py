"""The in-process bus's durable inbox: a command is committed here before its sender is told it
was sent, deleted once the engine has handled it, and delivered again after a crash
(``shared/bus/inbox.py``).

Revision ID: 0003
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inbox",
        sa.Column("message_id", sa.String(200), primary_key=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_inbox_seq", "inbox", ["seq"])


def downgrade() -> None:
    op.drop_index("ix_inbox_seq", table_name="inbox")
    op.drop_table("inbox")
