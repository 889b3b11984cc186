"""snapshot completion: an interrupted ingest's snapshot is marked incomplete

`snapshot.completed_at` is NULL while an `ingest` fills the snapshot and set once its last
file is committed; `ingest_source`, `ingest_extractor` and `ingest_started_at` say which
ingest that is, so `ingest --resume` (or the same command run again) can finish it. Existing
snapshots were complete as far as anyone knew: they are backfilled with their `updated_at`.

Revision ID: 0004_snapshot_completion
Revises: 0003_captures
Create Date: 2026-11-25
"""
from alembic import op
import sqlalchemy as sa


revision = '0004_snapshot_completion'
down_revision = '0003_captures'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('snapshot', schema=None) as batch_op:
        batch_op.add_column(sa.Column('completed_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('ingest_source', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('ingest_extractor', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('ingest_started_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_snapshot_completed_at', ['completed_at'], unique=False)
    op.execute("UPDATE snapshot SET completed_at = updated_at")


def downgrade() -> None:
    with op.batch_alter_table('snapshot', schema=None) as batch_op:
        batch_op.drop_index('ix_snapshot_completed_at')
        batch_op.drop_column('ingest_started_at')
        batch_op.drop_column('ingest_extractor')
        batch_op.drop_column('ingest_source')
        batch_op.drop_column('completed_at')
