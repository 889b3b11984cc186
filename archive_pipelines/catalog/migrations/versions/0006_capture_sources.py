"""capture sources: a session is a crawl or an imported WARC (of an adopted snapshot or not)

A capture's record lay in a crawl segment (page-index JSON lines) or a compacted session;
now also in an imported WARC file, stored as a blob: `crawl_session.kind` says which
(`crawl`, `warc`), `source` names the imported file as it was given, and `snapshot_id` links
the captures of an adopted ArchiveBox snapshot's own WARC to that snapshot. Existing sessions
are crawls: `kind` defaults to `crawl`, the others NULL.

Revision ID: 0006_capture_sources
Revises: 0005_page_titles
Create Date: 2026-11-27
"""
from alembic import op
import sqlalchemy as sa


revision = '0006_capture_sources'
down_revision = '0005_page_titles'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('crawl_session', schema=None) as batch_op:
        batch_op.add_column(sa.Column('kind', sa.String(length=16), nullable=False,
                                      server_default='crawl'))
        batch_op.add_column(sa.Column('source', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('snapshot_id', sa.String(length=36), nullable=True))
        batch_op.create_foreign_key('fk_crawl_session_snapshot', 'snapshot', ['snapshot_id'],
                                    ['id'], ondelete='SET NULL')
        batch_op.create_check_constraint('ck_crawl_session_kind', "kind IN ('crawl', 'warc')")
        batch_op.create_index('ix_crawl_session_snapshot', ['snapshot_id'])


def downgrade() -> None:
    with op.batch_alter_table('crawl_session', schema=None) as batch_op:
        batch_op.drop_index('ix_crawl_session_snapshot')
        batch_op.drop_constraint('ck_crawl_session_kind', type_='check')
        batch_op.drop_constraint('fk_crawl_session_snapshot', type_='foreignkey')
        batch_op.drop_column('snapshot_id')
        batch_op.drop_column('source')
        batch_op.drop_column('kind')
