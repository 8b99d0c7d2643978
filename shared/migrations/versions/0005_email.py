"""The email gateway: where it is in the mailbox, the mail it has read, what it knows of each address.

Revision ID: 0005
Revises: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "email_mailbox",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("uidvalidity", sa.BigInteger(), nullable=True),
        sa.Column("last_uid", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "email_seen",
        sa.Column("message_id", sa.String(300), primary_key=True),
        sa.Column("sender", sa.String(320), nullable=True),
        sa.Column("outcome", sa.String(40), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "email_contacts",
        sa.Column("address", sa.String(320), primary_key=True),
        sa.Column("failing", sa.Boolean(), nullable=False),
        sa.Column("failure", sa.Text(), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    for table in ("email_contacts", "email_seen", "email_mailbox"):
        op.drop_table(table)
