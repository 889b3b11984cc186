"""capture URL keys: every capture filed under its SURT key, for replay and CDX lookups

`page_fetch.urlkey` holds `surt.urlkey(url)`: the SURT key CDX servers sort by (long keys cut
and suffixed with their hash). The captures already there are keyed here, in batches of rows
by id (so a large catalog is never read whole), then the column becomes NOT NULL and is
indexed in SURT then time order: `ix_page_fetch_urlkey (urlkey, fetched_ms, id)` (the order
lookups read in, so PostgreSQL walks it for any key range whatever it estimates the range
holds: with `(urlkey, fetched_ms)` alone it sorted whole hosts it had guessed small). On
PostgreSQL the column compares bytewise (collation "C", as SQLite always does), so a key prefix
is one index range whatever the database's locale.

Revision ID: 0007_capture_urlkeys
Revises: 0006_capture_sources
Create Date: 2026-11-27
"""
from alembic import context, op
import sqlalchemy as sa

from archive_pipelines.surt import urlkey


revision = '0007_capture_urlkeys'
down_revision = '0006_capture_sources'
branch_labels = None
depends_on = None

URLKEY = sa.Text().with_variant(sa.Text(collation='C'), 'postgresql')
BATCH_ROWS = 5_000  # the tests set `urlkey_batch_rows` in the Alembic config's attributes


def upgrade() -> None:
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.add_column(sa.Column('urlkey', URLKEY, nullable=True))
    _key_existing_captures(op.get_bind())
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.alter_column('urlkey', existing_type=URLKEY, nullable=False)
        batch_op.create_index('ix_page_fetch_urlkey', ['urlkey', 'fetched_ms', 'id'],
                                 unique=False)


def _key_existing_captures(bind: sa.Connection) -> None:
    batch = int(context.config.attributes.get('urlkey_batch_rows', BATCH_ROWS))
    postgres = bind.dialect.name == 'postgresql'
    after = -1
    while True:
        rows = bind.execute(sa.text(
            'SELECT id, url FROM page_fetch WHERE id > :after ORDER BY id LIMIT :batch'),
            {'after': after, 'batch': batch}).all()
        if not rows:
            return
        if postgres:  # one statement per batch (psycopg2's executemany is a round trip a row)
            bind.execute(sa.text(
                'UPDATE page_fetch SET urlkey = keyed.key '
                'FROM unnest(CAST(:ids AS BIGINT[]), CAST(:keys AS TEXT[])) AS keyed (id, key) '
                'WHERE page_fetch.id = keyed.id'),
                {'ids': [row[0] for row in rows], 'keys': [urlkey(row[1]) for row in rows]})
        else:
            bind.execute(sa.text('UPDATE page_fetch SET urlkey = :key WHERE id = :id'),
                         [{'id': row[0], 'key': urlkey(row[1])} for row in rows])
        after = rows[-1][0]


def downgrade() -> None:
    with op.batch_alter_table('page_fetch', schema=None) as batch_op:
        batch_op.drop_index('ix_page_fetch_urlkey')
        batch_op.drop_column('urlkey')
