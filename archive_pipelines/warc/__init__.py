"""The archive in the field's formats: WARC 1.1 and WACZ out (and, later, in).

The catalog and the blob store are the archive; a WARC file is a view of it, written with
`warcio`. `surt` and `cdxj` are our own small implementations of the SURT form and the CDXJ
index line (the field's packages for them pull in AGPL code; they serve as test-time
validators only); `wacz` packages WARCs, their index and the page list.
"""
