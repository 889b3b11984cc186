"""capture QA: `capture_qa`, one row per check of a browser capture against its replay

A browser capture (a page loaded in Chromium, with its full-page screenshot) is checked by
loading its replay in the browser: the two screenshots' pixel score, the page's resources
answered at capture time and by the replay from the archive (the missing ones listed, at most
50, as JSON), the requests that left the replay server, an overall score and an error when the
replay could not be loaded. A new table: nothing there before changes. A check belongs to its
page capture (`page_fetch_id`, deleted with it).

Revision ID: 0010_capture_qa
Revises: 0009_capture_kinds
Create Date: 2026-11-28
"""
import sqlalchemy as sa
from alembic import op

revision = '0010_capture_qa'
down_revision = '0009_capture_kinds'
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'capture_qa',
        sa.Column('id', _ID, autoincrement=True, nullable=False),
        sa.Column('page_fetch_id', _ID, nullable=False),
        sa.Column('checked_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('pixel_score', sa.Float(), nullable=True),
        sa.Column('resources_expected', sa.Integer(), nullable=False),
        sa.Column('resources_replayed', sa.Integer(), nullable=False),
        sa.Column('missing', sa.Text(), nullable=False),
        sa.Column('leaks', sa.Integer(), nullable=False),
        sa.Column('score', sa.Float(), nullable=False),
        sa.Column('error', sa.Text(), nullable=True),
        sa.CheckConstraint('score >= 0 AND score <= 1', name='ck_capture_qa_score'),
        sa.ForeignKeyConstraint(['page_fetch_id'], ['page_fetch.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_capture_qa_page', 'capture_qa', ['page_fetch_id', 'checked_at'])
    op.create_index('ix_capture_qa_checked', 'capture_qa', ['checked_at'])


def downgrade() -> None:
    op.drop_index('ix_capture_qa_checked', table_name='capture_qa')
    op.drop_index('ix_capture_qa_page', table_name='capture_qa')
    op.drop_table('capture_qa')
