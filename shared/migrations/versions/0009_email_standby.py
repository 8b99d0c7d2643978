"""The email gateway's standby lists: the addresses a host keeps ready to play (``standby ADDRESS``),
told by mail when that host opens a game or a seat opens in one of the host's games.

Revision ID: 0009
Revises: 0008
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "email_standby",
        sa.Column("host", sa.String(320), primary_key=True),
        sa.Column("address", sa.String(320), primary_key=True),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("email_standby")
