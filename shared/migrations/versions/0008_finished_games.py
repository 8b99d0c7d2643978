"""The record of finished games (``services/engine/records.py``): a row per finished game
(``finished_games``: its code, table, host, size, winner, cause, end), a row per seat
(``seat_records``: who played which role on which team, and whether they won), and what each person
asked of their records (``stats_people``: hidden, or forgotten up to a moment). A projection of the
event log, rebuilt from it by ``avalon stats rebuild``.

Revision ID: 0008
Revises: 0007
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "finished_games",
        sa.Column("game_id", sa.String(200), primary_key=True),
        sa.Column("code", sa.String(16), nullable=False),
        sa.Column("table_key", sa.String(200), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("winner", sa.String(8), nullable=False),
        sa.Column("cause", sa.String(32), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_finished_games_code", "finished_games", ["code"])
    op.create_index("ix_finished_games_table_ended", "finished_games", ["table_key", "ended_at"])
    op.create_table(
        "seat_records",
        sa.Column("game_id", sa.String(200), primary_key=True),
        sa.Column("person", sa.String(200), primary_key=True),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("team", sa.String(8), nullable=False),
        sa.Column("won", sa.Boolean(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("cause", sa.String(32), nullable=False),
        sa.Column("table_key", sa.String(200), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=False),
    )
    # covering: a person's stats and a leaderboard are read from the index alone
    op.create_index("ix_seat_records_person", "seat_records", ["person", "role", "team", "size", "cause", "won"])
    op.create_index("ix_seat_records_table_person", "seat_records", ["table_key", "person", "won"])
    op.create_index("ix_seat_records_host_person", "seat_records", ["host", "person", "won"])
    op.create_table(
        "stats_people",
        sa.Column("person", sa.String(200), primary_key=True),
        sa.Column("hidden", sa.Boolean(), nullable=False),
        sa.Column("forgotten_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("stats_people")
    op.drop_index("ix_seat_records_host_person", table_name="seat_records")
    op.drop_index("ix_seat_records_table_person", table_name="seat_records")
    op.drop_index("ix_seat_records_person", table_name="seat_records")
    op.drop_table("seat_records")
    op.drop_index("ix_finished_games_table_ended", table_name="finished_games")
    op.drop_index("ix_finished_games_code", table_name="finished_games")
    op.drop_table("finished_games")
