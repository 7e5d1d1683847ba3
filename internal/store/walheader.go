package store

// walHeaderSize is one copy of SQLite's WAL-index header; SQLite keeps two, one after the other,
// writing the second before the first, and a reader that sees them differ has caught a commit
// half-way (see walIndex).
const walHeaderSize = 48

// walIndexVersion is the iVersion every SQLite since 3.7.0 writes into the header.
const walIndexVersion = 3007000

// walHeader is one reading of the header, as 32-bit words in the machine's byte order (the
// -shm file is in native order by design: it never leaves the machine).
type walHeader [walHeaderSize / 4]uint32

// iChange is the header's commit counter.
func (h walHeader) iChange() uint32 { return h[2] }
