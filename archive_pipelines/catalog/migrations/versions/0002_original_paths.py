"""original paths and ArchiveBox identity

A snapshot file's `relative_path` becomes its whole path inside the snapshot folder (the
extractor stays as metadata), unique per snapshot: existing rows get `<extractor>/` in
front, which is exactly the path their view links already had. Adds ArchiveBox's result
ids and `updated`, and `snapshot_entry` for the symlinks and empty folders found inside
snapshot folders.

Revision ID: 0002_original_paths
Revises: 0001_initial
Create Date: 2026-11-25
"""
from alembic import op
import sqlalchemy as sa


revision = '0002_original_paths'
down_revision = '0001_initial'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE snapshot_file SET relative_path = extractor || '/' || relative_path")
    with op.batch_alter_table('snapshot_file', schema=None) as batch_op:
        batch_op.drop_constraint('uq_snapshot_file_path', type_='unique')
        batch_op.create_unique_constraint('uq_snapshot_file_path', ['snapshot_id', 'relative_path'])
    with op.batch_alter_table('snapshot', schema=None) as batch_op:
        batch_op.add_column(sa.Column('archived_updated_at', sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table('archive_result', schema=None) as batch_op:
        batch_op.add_column(sa.Column('archivebox_id', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('archivebox_uuid', sa.String(length=36), nullable=True))
    op.create_table('snapshot_entry',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('snapshot_id', sa.String(length=36), nullable=False),
    sa.Column('relative_path', sa.String(length=1024), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('target', sa.Text(), nullable=True),
    sa.Column('inside', sa.Boolean(), nullable=False),
    sa.CheckConstraint("kind IN ('symlink', 'folder')", name='ck_snapshot_entry_kind'),
    sa.ForeignKeyConstraint(['snapshot_id'], ['snapshot.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('snapshot_id', 'relative_path', name='uq_snapshot_entry_path')
    )


def downgrade() -> None:
    op.drop_table('snapshot_entry')
    with op.batch_alter_table('archive_result', schema=None) as batch_op:
        batch_op.drop_column('archivebox_uuid')
        batch_op.drop_column('archivebox_id')
    with op.batch_alter_table('snapshot', schema=None) as batch_op:
        batch_op.drop_column('archived_updated_at')
    with op.batch_alter_table('snapshot_file', schema=None) as batch_op:
        batch_op.drop_constraint('uq_snapshot_file_path', type_='unique')
        batch_op.create_unique_constraint('uq_snapshot_file_path', ['snapshot_id', 'extractor', 'relative_path'])
    op.execute("UPDATE snapshot_file SET relative_path = substr(relative_path, length(extractor) + 2)")
