"""captures: crawled pages in the catalog

`page_fetch` becomes a capture (one HTTP exchange of a crawl: the page, its sub-requests,
the hops of its redirect chains) with its canonical-URL hash, site, epoch-ms time, status,
body hash and stored-body reference, and where its record lies; `crawl_segment` is the
ledger of ingested segment files; `crawl_session` gains its compacted file and index. Nothing wrote
`page_fetch` or `crawl_session` before this revision, so both are recreated.

Revision ID: 0003_captures
Revises: 0002_original_paths
Create Date: 2026-11-25
"""
from alembic import op
import sqlalchemy as sa


revision = '0003_captures'
down_revision = '0002_original_paths'
branch_labels = None
depends_on = None

BLOB_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    op.drop_table('page_fetch')
    op.drop_table('crawl_session')
    op.create_table('crawl_session',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('index_dir', sa.Text(), nullable=False),
    sa.Column('pages', sa.Integer(), nullable=False),
    sa.Column('compacted_path', sa.Text(), nullable=True),
    sa.Column('compacted_blob_id', BLOB_ID, nullable=True),
    sa.Column('index_blob_id', BLOB_ID, nullable=True),
    sa.ForeignKeyConstraint(['compacted_blob_id'], ['blob.id'], ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['index_blob_id'], ['blob.id'], ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('crawl_session', schema=None) as batch_op:
        batch_op.create_index('ix_crawl_session_started_at', ['started_at'], unique=False)
    op.create_table('crawl_segment',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('path', sa.String(length=512), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=36), nullable=False),
    sa.Column('blob_id', BLOB_ID, nullable=True),
    sa.Column('records', sa.Integer(), nullable=False),
    sa.Column('rejected', sa.Integer(), nullable=False),
    sa.Column('cut_bytes', sa.BigInteger(), nullable=False),
    sa.Column('ingested_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['blob_id'], ['blob.id'], ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['session_id'], ['crawl_session.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('path')
    )
    op.create_table('page_fetch',
    sa.Column('id', BLOB_ID, autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=36), nullable=False),
    sa.Column('segment_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('navigation_id', sa.String(length=64), nullable=True),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('url_hash', sa.String(length=64), nullable=False),
    sa.Column('site', sa.String(length=300), nullable=False),
    sa.Column('canonical_url', sa.Text(), nullable=False),
    sa.Column('fetched_ms', sa.BigInteger(), nullable=False),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('final_url', sa.Text(), nullable=True),
    sa.Column('redirects', sa.Text(), nullable=True),
    sa.Column('content_type', sa.String(length=255), nullable=True),
    sa.Column('body_sha256', sa.String(length=64), nullable=True),
    sa.Column('body_size', sa.BigInteger(), nullable=True),
    sa.Column('body_blob_id', BLOB_ID, nullable=True),
    sa.Column('truncated', sa.Boolean(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('depth', sa.Integer(), nullable=True),
    sa.Column('index_path', sa.Text(), nullable=False),
    sa.Column('record_offset', sa.BigInteger(), nullable=False),
    sa.Column('request_index', sa.Integer(), nullable=False),
    sa.CheckConstraint("kind IN ('page', 'request', 'redirect')", name='ck_page_fetch_kind'),
    sa.ForeignKeyConstraint(['body_blob_id'], ['blob.id'], ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['segment_id'], ['crawl_segment.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['session_id'], ['crawl_session.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.create_index('ix_page_fetch_url_hash', ['url_hash', 'fetched_ms'], unique=False)
        batch_op.create_index('ix_page_fetch_session', ['session_id', 'fetched_ms'], unique=False)
        batch_op.create_index('ix_page_fetch_site', ['site', 'fetched_ms'], unique=False)
        batch_op.create_index('ix_page_fetch_body', ['body_sha256'], unique=False)
        batch_op.create_index('ix_page_fetch_segment', ['segment_id', 'record_offset'], unique=False)


def downgrade() -> None:
    op.drop_table('page_fetch')
    op.drop_table('crawl_segment')
    op.drop_table('crawl_session')
    op.create_table('crawl_session',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('index_dir', sa.Text(), nullable=False),
    sa.Column('pages', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('crawl_session', schema=None) as batch_op:
        batch_op.create_index('ix_crawl_session_started_at', ['started_at'], unique=False)
    op.create_table('page_fetch',
    sa.Column('id', BLOB_ID, autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=36), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('url_hash', sa.String(length=64), nullable=False),
    sa.Column('fetched_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('body_sha256', sa.String(length=64), nullable=True),
    sa.Column('index_path', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['crawl_session.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.create_index('ix_page_fetch_session', ['session_id'], unique=False)
        batch_op.create_index('ix_page_fetch_url_hash', ['url_hash', 'fetched_at'], unique=False)
