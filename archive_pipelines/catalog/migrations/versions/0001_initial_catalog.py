"""initial catalog

Revision ID: 0001_initial
Revises: 
Create Date: 2026-11-21
"""
from alembic import op
import sqlalchemy as sa


revision = '0001_initial'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('blob',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('mime_type', sa.String(length=255), nullable=False),
    sa.Column('ref_count', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('unreferenced_since', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint('length(sha256) = 64', name='ck_blob_sha256_length'),
    sa.CheckConstraint('ref_count >= 0', name='ck_blob_ref_count_nonnegative'),
    sa.CheckConstraint('size >= 0', name='ck_blob_size_nonnegative'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('sha256')
    )
    with op.batch_alter_table('blob', schema=None) as batch_op:
        batch_op.create_index('ix_blob_unreferenced_since', ['unreferenced_since'], unique=False)

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

    op.create_table('snapshot',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('timestamp', sa.String(length=32), nullable=False),
    sa.Column('title', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_by', sa.String(length=150), nullable=False),
    sa.Column('crawl_id', sa.String(length=64), nullable=True),
    sa.Column('fs_version', sa.String(length=16), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('snapshot', schema=None) as batch_op:
        batch_op.create_index('ix_snapshot_crawl_id', ['crawl_id'], unique=False)
        batch_op.create_index('ix_snapshot_created_at', ['created_at'], unique=False)
        batch_op.create_index('ix_snapshot_fs_version_id', ['fs_version', 'id'], unique=False)
        batch_op.create_index('ix_snapshot_timestamp', ['timestamp'], unique=False)

    op.create_table('store',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('location', sa.Text(), nullable=False),
    sa.Column('codec', sa.String(length=16), nullable=False),
    sa.CheckConstraint("kind IN ('local', 's3')", name='ck_store_kind'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('tag',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('archive_result',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('snapshot_id', sa.String(length=36), nullable=False),
    sa.Column('extractor', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('output', sa.Text(), nullable=True),
    sa.Column('cmd', sa.JSON(), nullable=True),
    sa.Column('cmd_version', sa.String(length=128), nullable=True),
    sa.Column('pwd', sa.Text(), nullable=True),
    sa.Column('start_ts', sa.DateTime(timezone=True), nullable=True),
    sa.Column('end_ts', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['snapshot_id'], ['snapshot.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('archive_result', schema=None) as batch_op:
        batch_op.create_index('ix_archive_result_snapshot_extractor', ['snapshot_id', 'extractor'], unique=False)

    op.create_table('blob_copy',
    sa.Column('blob_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('store_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('mtime', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("status IN ('missing', 'ongoing', 'present', 'corrupted')", name='ck_blob_copy_status'),
    sa.ForeignKeyConstraint(['blob_id'], ['blob.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['store_id'], ['store.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('blob_id', 'store_id')
    )
    with op.batch_alter_table('blob_copy', schema=None) as batch_op:
        batch_op.create_index('ix_blob_copy_store_status', ['store_id', 'status', 'blob_id'], unique=False)

    op.create_table('page_fetch',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
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

    op.create_table('snapshot_file',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('snapshot_id', sa.String(length=36), nullable=False),
    sa.Column('blob_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('extractor', sa.String(length=64), nullable=False),
    sa.Column('relative_path', sa.String(length=1024), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['blob_id'], ['blob.id'], ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['snapshot_id'], ['snapshot.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('snapshot_id', 'extractor', 'relative_path', name='uq_snapshot_file_path')
    )
    with op.batch_alter_table('snapshot_file', schema=None) as batch_op:
        batch_op.create_index('ix_snapshot_file_blob', ['blob_id'], unique=False)

    op.create_table('snapshot_tag',
    sa.Column('snapshot_id', sa.String(length=36), nullable=False),
    sa.Column('tag_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['snapshot_id'], ['snapshot.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tag_id'], ['tag.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('snapshot_id', 'tag_id')
    )
    with op.batch_alter_table('snapshot_tag', schema=None) as batch_op:
        batch_op.create_index('ix_snapshot_tag_tag', ['tag_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('snapshot_tag', schema=None) as batch_op:
        batch_op.drop_index('ix_snapshot_tag_tag')

    op.drop_table('snapshot_tag')
    with op.batch_alter_table('snapshot_file', schema=None) as batch_op:
        batch_op.drop_index('ix_snapshot_file_blob')

    op.drop_table('snapshot_file')
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.drop_index('ix_page_fetch_url_hash')
        batch_op.drop_index('ix_page_fetch_session')

    op.drop_table('page_fetch')
    with op.batch_alter_table('blob_copy', schema=None) as batch_op:
        batch_op.drop_index('ix_blob_copy_store_status')

    op.drop_table('blob_copy')
    with op.batch_alter_table('archive_result', schema=None) as batch_op:
        batch_op.drop_index('ix_archive_result_snapshot_extractor')

    op.drop_table('archive_result')
    op.drop_table('tag')
    op.drop_table('store')
    with op.batch_alter_table('snapshot', schema=None) as batch_op:
        batch_op.drop_index('ix_snapshot_timestamp')
        batch_op.drop_index('ix_snapshot_fs_version_id')
        batch_op.drop_index('ix_snapshot_created_at')
        batch_op.drop_index('ix_snapshot_crawl_id')

    op.drop_table('snapshot')
    with op.batch_alter_table('crawl_session', schema=None) as batch_op:
        batch_op.drop_index('ix_crawl_session_started_at')

    op.drop_table('crawl_session')
    with op.batch_alter_table('blob', schema=None) as batch_op:
        batch_op.drop_index('ix_blob_unreferenced_since')

    op.drop_table('blob')
