"""The gateways' own memory (which game a group plays, seats, names, messages to edit), kept
across restarts.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gateway_state",
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("blob", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("gateway_state")
