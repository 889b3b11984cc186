"""page titles: a page capture keeps its HTML title

`page_fetch.title` holds the `<title>` the crawler read from a page's body (the page record's
`title`), so a WACZ page list and a capture listing can show it. Captures ingested before
have none: NULL, as for a page without a title (their records never carried one).

Revision ID: 0005_page_titles
Revises: 0004_snapshot_completion
Create Date: 2026-11-27
"""
from alembic import op
import sqlalchemy as sa


revision = '0005_page_titles'
down_revision = '0004_snapshot_completion'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.add_column(sa.Column('title', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.drop_column('title')
