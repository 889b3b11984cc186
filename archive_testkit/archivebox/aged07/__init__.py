"""The `Aged07` layout: a realistic ArchiveBox 0.7.x collection, for import tests and benchmarks.

`generate_collection(root, Aged07(), snapshots=N, seed=S)` writes what a collection looks like
after years of use that ended on ArchiveBox 0.7.2, deterministically from `seed`:

* `index.sqlite3`: the Django schema 0.7 ends with (core migrations up to
  `0022_auto_20231023_2008`), column order included: Django's SQLite schema editor rebuilds a
  table on every AlterField and moves the altered column last, hence `core_tag`
  (`name`, `slug`, `id`) and `core_snapshot` (`id`, `timestamp`, `title`, `added`, `updated`,
  `url`). Snapshot and result UUIDs are 32-char hex; datetimes are Django's naive-UTC text
  `str(datetime)`: `2023-11-20 10:02:11.512345`, or `2023-11-20 10:02:11` when the microseconds
  are 0. `cmd` is JSON text (`json.dumps`, default separators). `url` is UNIQUE, so a URL has
  at most one row.
* `ArchiveBox.conf`, `sources/` (the import files), `logs/errors.log`, `archive/`. 0.7 writes
  no top-level `index.html` / `index.json` (its main index is the SQLite file only), so the
  `../../index.html` link of every snapshot page is broken on disk, as in real collections.
* `archive/<timestamp>/`, flat: `index.json` (`Link._asdict(extended=True)`, written with
  `json.dump(indent=4, sort_keys=True)`, ASCII-escaped), `index.html` (the snapshot page),
  and the extractor outputs: `favicon.ico`, `headers.json`, `singlefile.html`, `output.pdf`,
  `screenshot.png`, `output.html`, `htmltotext.txt`, `archive.org.txt`,
  `readability/{content.html,content.txt,article.json}`, `mercury/{...}`, `warc/<unix>.warc.gz`,
  `media/` (empty unless the page had a video), `git/<repo>/` (github.com only) and the wget
  tree `<host>/<path>/index.html` with its page requisites, `--backup-converted` `.orig`
  copies, per-host assets shared byte-for-byte across snapshots of one host
  (`<host>/css/site.css`, `<host>/static/jquery.min.js`, ...) and a CDN file shared by every
  snapshot (`cdn.jsdelivr.net/...`).

0.7's `index.json` DOES carry `snapshot_id` (the dashed UUID string of the Snapshot row):
`Link._asdict(extended=True)` in 0.6.x-0.7.x adds `snapshot_id` (see `archivebox/index/schema.py`
at ArchiveBox commit f5739506, the 0.7 tree that also added `htmltotext`), and
`write_json_link_details` writes `_asdict(extended=True)`. An orphan folder's `snapshot_id`
names a row that no longer exists.

History mirrors how a collection ages: a third of the snapshots came from a 0.4-era import
(integer timestamps, two of them colliding as `T` and `T.0`, results first written by 0.4 then
copied into SQLite by migration 0007, all sharing ONE result uuid because migration 0011 added
`uuid` with a callable default that SQLite evaluated once), a third from a 0.6-era bookmark
import (`1600000000.0`-style timestamps), the rest from 0.7 text imports
(`str(datetime.timestamp())`, e.g. `1700481234.56789`). Every snapshot was last archived or
updated by 0.7 (so every `index.json` has the 0.7 shape and lists every 0.7 extractor, with an
empty list for those that never ran). Some results failed (the JSON keeps
`"ArchiveError: ..."`, SQLite keeps `str(exception)`), some were retried and succeeded
(two history entries), a few archive.org submissions were skipped.

Every file of a folder carries the folder's last archiving time as its mtime.

`orphans` adds folders left behind by `archivebox remove` without `--delete` whose URL was
added again later: same URL as a live snapshot, an older timestamp, no SQLite row (0.7's
`url` is UNIQUE, so two rows can never share a URL). They count in `snapshots`.
"""
