"""capture kinds: `page_fetch.kind` widened to 16 characters, with `screenshot` and `dom`

A browser page load is captured as its page and requests (as before) plus a full-page
screenshot and the rendered DOM, captures of their own: kinds `screenshot` (10 characters, more
than the 8 the column held) and `dom`. The column becomes VARCHAR(16) and its check constraint
`ck_page_fetch_kind` admits the two new kinds. Rows already there are kept as they are (every
old kind is a new kind). Downgrade refuses while captures of the new kinds exist (they would not
fit the old column or constraint), rather than drop or cut them.

`snapshot_entry.kind` (also VARCHAR(8); 'symlink' or 'folder') is unchanged.

Revision ID: 0009_capture_kinds
Revises: 0008_crawl_requests
Create Date: 2026-11-29
"""
import sqlalchemy as sa
from alembic import op

revision = '0009_capture_kinds'
down_revision = '0008_crawl_requests'
branch_labels = None
depends_on = None

OLD_KINDS = "kind IN ('page', 'request', 'redirect')"
NEW_KINDS = "kind IN ('page', 'request', 'redirect', 'screenshot', 'dom')"


def upgrade() -> None:
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.drop_constraint('ck_page_fetch_kind', type_='check')
        batch_op.alter_column('kind', existing_type=sa.String(length=8),
                              type_=sa.String(length=16), existing_nullable=False)
        batch_op.create_check_constraint('ck_page_fetch_kind', NEW_KINDS)


def downgrade() -> None:
    new = op.get_bind().execute(sa.text(
        "SELECT COUNT(*) FROM page_fetch WHERE kind IN ('screenshot', 'dom')")).scalar()
    if new:
        raise RuntimeError(
            f"cannot downgrade below 0009_capture_kinds: {new} captures are screenshots or DOMs "
            "(kinds the older schema cannot hold); remove them first")
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.drop_constraint('ck_page_fetch_kind', type_='check')
        batch_op.alter_column('kind', existing_type=sa.String(length=16),
                              type_=sa.String(length=8), existing_nullable=False)
        batch_op.create_check_constraint('ck_page_fetch_kind', OLD_KINDS)
