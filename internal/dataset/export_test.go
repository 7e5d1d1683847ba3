package dataset

import "backoffice/internal/domain"

// SetSAMChunkLogs sets how many SAM logs the streaming import hands the store at a time, until the
// returned function puts it back: tests cross chunk boundaries with a few logs.
func SetSAMChunkLogs(n int) (restore func()) {
	before := samChunkLogs
	samChunkLogs = n
	return func() { samChunkLogs = before }
}

// MaybeTakenAll marks every SAM log id of f as one the Bloom filter may have seen before: the
// false hits the import must tell from real repeats.
func MaybeTakenAll(f *File) {
	sr := f.samLogs()
	for {
		var l domain.SAMActionLog
		ok, _, _ := sr.next(&l, true)
		if !ok {
			return
		}
		u, _ := l.ID.Bytes()
		f.maybeTaken[u] = true
	}
}

// NewestFirst says whether the import will hand f's chunks of logs to the store last one first.
func NewestFirst(f *File) bool { return f.newestFirst }
