"""crawl requests: crawls of a definition queued for the long-running crawler

`crawl_request` holds one row per crawl queued by Dagster (a job run or a schedule tick) or
the command line: the definition as it was when queued (JSON), its state (queued, running,
finished, failed, cancelled), the crawler that took it and its last heartbeat (a stale one is
taken again and the crawl resumed under the same `crawl_id`), its progress and its outcome.
`crawler` holds each long-running crawler and when it last said it was alive (busy or idle), so
a queued crawl nobody will consume is seen as such. New tables: nothing there before changes.

Revision ID: 0008_crawl_requests
Revises: 0007_capture_urlkeys
Create Date: 2026-11-28
"""
from alembic import op
import sqlalchemy as sa


revision = '0008_crawl_requests'
down_revision = '0007_capture_urlkeys'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'crawl_request',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('crawl_id', sa.String(length=128), nullable=True),
        sa.Column('definition_name', sa.String(length=64), nullable=False),
        sa.Column('definition', sa.JSON(), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('requested_by', sa.Text(), nullable=False),
        sa.Column('queued_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('claimed_by', sa.Text(), nullable=True),
        sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('progress', sa.JSON(), nullable=False),
        sa.Column('outcome', sa.JSON(), nullable=True),
        sa.CheckConstraint(
            "state IN ('queued', 'running', 'finished', 'failed', 'cancelled')",
            name='ck_crawl_request_state'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('crawl_id'),
    )
    op.create_table(
        'crawler',
        sa.Column('worker', sa.String(length=255), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('seen_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('running', sa.Integer(), nullable=False),
        sa.Column('stopped_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('worker'),
    )
    op.create_index('ix_crawl_request_state', 'crawl_request', ['state', 'queued_at'])
    op.create_index('ix_crawl_request_definition', 'crawl_request',
                    ['definition_name', 'queued_at'])


def downgrade() -> None:
    op.drop_index('ix_crawl_request_definition', table_name='crawl_request')
    op.drop_index('ix_crawl_request_state', table_name='crawl_request')
    op.drop_table('crawl_request')
    op.drop_table('crawler')
